// Package replay is the model-free replay (`rcm bench replay`): each
// session, in each mode and threshold, both schedules, is sent through a
// running proxy as OpenCode would (the full history re-sent on every call,
// streaming, as chat completions, Anthropic Messages or Responses bodies)
// against the scripted upstream (internal/scripted), which answers with the
// recorded assistant messages and records what the proxy forwarded.
//
// Per focus call of S_switch, against the same call of S_base: focus
// recall, contamination, tokens ratio, and the same over the post-switch
// focus calls; over every S_switch call: routing accuracy and calibration,
// fallback rate, prefix stability; proxy overhead; the cost with prompt
// caching (Cost) per schedule. Each S_switch replay ends with the harness's
// compaction call, built as OpenCode 1.18.33 builds it (CompactionBody):
// compaction coverage is the share of unfinished tasks whose every request
// the forwarded call holds. In rcm mode the focus task's state record is
// read from the proxy's inspector after each focus turn (record bytes).
// Means over sessions with 95% t-intervals, near and far apart. Results
// writes results.json, report.md and the plots.
//
// Logs replays real session logs (bench/chatlog) instead: each session
// once per mode and threshold, as OpenCode would have sent it; over the
// labelled ones it measures what the labels say each request needed
// against what was forwarded (LogMetrics), and for every session it lists
// each request's decision and drops (Audit).
//
// Caveats: the replay talks to a running proxy over HTTP as a harness
// would; it must not import proxy internals. It reads task records from the
// inspector as JSON; Options.Render turns them into text (cmd/rcm wires
// memory.Render). The compaction call is sent once, at the end; a harness
// compacts when its context fills, on a shorter history. Replayed tool
// outputs are the recorded ones; nothing is executed.
package replay
