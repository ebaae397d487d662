// Package codex is the harness.Harness of the Codex CLI: each schedule is
// one Codex thread, its first request a `codex exec` turn and the others
// `codex exec resume <thread>` (internal/client/codex), with the arm's mode
// in the provider's base URL and its threshold and the agent's id sent as
// the provider's http_headers, over HTTP.
//
// Caveats: every command the model asks for runs unasked
// (approval_policy "never", full-access sandbox), so it must only run in
// throw-away checkouts; each session has its own CODEX_HOME. WebSocket
// runs are not offered: the bench's meter counts HTTP calls only.
package codex
