package capture

import "testing"

// CodexDir is the folder of the Codex CLI captures (testdata/codex).
func CodexDir() string { return testdata("codex") }

// Codex reads the Codex capture called name (e.g. "tool_result_request").
// WebSocket frames ("ws_frame_*") are the frame's JSON as Body, with no
// headers; handshakes have headers and no Body.
func Codex(tb testing.TB, name string) Request {
	tb.Helper()
	return LoadIn(tb, CodexDir(), name)
}

// CodexNames lists every Codex capture.
func CodexNames(tb testing.TB) []string {
	tb.Helper()
	return NamesIn(tb, CodexDir())
}
