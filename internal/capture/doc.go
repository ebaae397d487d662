// Package capture loads the real OpenCode and Claude Code requests kept in
// the repository's testdata/opencode and testdata/claude-code folders, for
// tests of every package that reads them.
package capture
