// Package str holds the string helpers that several core packages need, so
// that each rule is written once: cutting a text to a byte budget without
// splitting a character (Clip), encoding a JSON string the way the
// harnesses do (Quote), how far two bodies agree (CommonPrefix), what a
// word's byte is (WordByte), and what a base URL must look like (HTTPURL).
package str
