// Package capture loads the real OpenCode requests kept in the repository's
// testdata/opencode folder, for tests of every package that reads them.
package capture
