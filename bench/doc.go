// Package bench measures switch gaps: bench specs (tasks, sessions, the
// S_base and S_switch schedules), importers of public trajectory formats,
// session assembly by the Switch-SWE rule, the model-free replay
// (`rcm bench replay`) and the real-harness runner (`rcm bench run`,
// `rcm bench report`). SPEC.md beside this file documents the spec format,
// every replay metric, the runner and its results file, and scoring.
//
// Importers convert what agents recorded into what OpenCode would send:
// OpenAI chat messages with native tool calls and role "tool" results.
// They never panic on outside input: unusable records come back as Skip
// values and the import goes on.
//
// Replay (Replay, Results): each session, in each mode and threshold, both
// schedules, is sent through a running proxy as OpenCode would (the full
// history re-sent on every call, streaming) against the scripted upstream
// (package scripted), which answers with the recorded assistant messages
// and records what the proxy forwarded. Per focus call of S_switch, against
// the same call of S_base: focus recall (the focus task's requests found
// verbatim in the forwarded context), contamination (share of forwarded
// bytes belonging to other tasks), tokens ratio (forwarded over sent), and
// the same over the post-switch focus calls (after another task's turn,
// where routing matters); over every S_switch call: routing accuracy and
// calibration, fallback rate, prefix stability; and proxy overhead; over
// every call of each schedule, the cost with prompt caching (Cost: the
// part of each context that repeats a prefix the session sent before bills
// at --cache-price), with its ratio to native's. Each
// S_switch replay ends with the harness's compaction call, built as OpenCode
// 1.18.33 builds it (CompactionBody): compaction coverage is the share of
// unfinished tasks whose every request the forwarded call holds. In rcm
// mode the focus task's state record is read from the proxy's inspector
// after each focus turn (record bytes). Means over sessions with 95%
// t-intervals, near and far apart.
//
// Run (Run, Harness, Verify, Report): a real harness works through each
// schedule in each arm in five worktree checkouts; the focus checkout's
// final diff is scored on a clean checkout as SWE-bench does: the diff's
// parts touching the test patch's files are left out, the rest applied,
// then the task's test patch, then the FAIL_TO_PASS and PASS_TO_PASS tests
// run. A test patch that does not apply is an error (checked before any
// model call), not an unresolved task. One JSONL line per run, appended as
// it finishes; a rerun resumes. Report computes Res_unint, Res_switch and
// Gap with bootstrap intervals, costs and flips.
//
// Caveats: the bench talks to a running proxy over HTTP as a harness would;
// it must not import proxy internals. It reads task records from the
// inspector as JSON; Options.Render turns them into text (cmd/rcm wires
// memory.Render: package memory's tests import bench). The compaction call
// is sent once, at the end; a harness compacts when its context fills, on
// a shorter history. Replayed tool outputs are the recorded
// ones; nothing is executed. The mini-swe-agent conversion drops assistant
// messages that broke that agent's one-bash-block format (and the error reply
// they drew), since native tool calling has no such exchange.
package bench
