// Package proc runs the real clients (OpenCode, Claude Code, Codex) in a
// process group of their own, so that ending a client also ends the
// shells, tools and servers it started. It also holds what starting any
// helper process needs: a free loopback port (FreePort) and the end of its
// output for an error (Tail).
//
// Caveats: process groups are a unix notion; elsewhere only the client's
// own process is signalled, and what it started may outlive it.
package proc
