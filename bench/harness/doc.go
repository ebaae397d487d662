// Package harness is the driver interface between the runner (package run)
// and a real coding agent: a Harness opens one Agent per schedule and arm
// (Arm: an rcm mode and its threshold), and the Agent sends the schedule's
// requests in order. Implementations live one folder each below it
// (harness/opencode, harness/claudecode), on top of the client plumbing in
// internal/client.
//
// Caveats: a turn the agent ended with an error returns ErrTurn, and the
// session goes on; any other error ends the run.
package harness
