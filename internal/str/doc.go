// Package str holds the string helpers that several core packages need, so
// that each rule is written once: cutting a text to a byte budget without
// splitting a character (Clip), and encoding a JSON string the way the
// harnesses do (Quote).
package str
