// Package codex drives the real OpenAI Codex CLI (`codex exec`, npm package
// @openai/codex) against a local Responses endpoint, for `rcm bench run
// --harness codex` and the proxy's real-client tests: it installs the
// pinned release from npm into the user's cache (Install), writes an
// isolated, offline CODEX_HOME whose config.toml points one provider at a
// base URL (Env, Config), and runs each user turn of a conversation as one
// `codex exec` process in a directory (Session: `codex exec` on the first
// turn, `codex exec resume <thread id>` after).
//
// Caveats: Codex keeps its threads under CODEX_HOME, so a Session must keep
// its environment for its whole life. The API key given to Env reaches
// Codex through its environment only (the provider's env_key names the
// variable); config.toml never holds it. Codex runs with
// approval_policy "never" and sandbox "danger-full-access": every command
// the model asks for runs unasked, so it must only work in a throw-away
// checkout. The thread id is Codex's own, known after the first turn; a
// caller that needs an id up front (the bench's accounting) sends its own
// with Config.Headers.
package codex
