// Package claudecode drives the real Claude Code client (`claude -p`, npm
// package @anthropic-ai/claude-code) for `rcm bench run --harness
// claude-code`: it installs a pinned release from npm into the user's cache
// (Install), builds an isolated offline environment pointed at rcm (Env),
// and runs each request of a schedule as one `claude -p` turn of a single
// Claude Code session (Session: --session-id on the first turn, --resume
// after), in the task's checkout.
//
// Caveats: Claude Code keeps its sessions under HOME/.claude, keyed by the
// working directory, so a Session must keep its HOME and directory for its
// whole life. The API key given to Env reaches Claude Code through its
// environment only; nothing here writes it to disk. Print mode never asks
// for permission: every tool call is allowed (--dangerously-skip-permissions
// with IS_SANDBOX=1), which is what an unattended bench run needs and why
// it must only run in a throw-away checkout.
package claudecode
