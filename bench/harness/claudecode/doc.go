// Package claudecode is the harness.Harness of Claude Code: each request of
// a schedule is one `claude -p` turn (internal/client/claudecode) of a
// single Claude Code session, in the task's checkout, with the arm's mode
// in ANTHROPIC_BASE_URL and its threshold in ANTHROPIC_CUSTOM_HEADERS.
//
// Caveats: every tool call is allowed (print mode never asks), so it must
// only run in throw-away checkouts; each session has its own home.
package claudecode
