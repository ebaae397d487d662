// Package bench documents rcm's switch-gap bench; its code is in the
// packages below it, one per stage, and cmd/rcm wires them into `rcm
// bench`. SPEC.md beside this file documents the spec format, every replay
// metric, the runner and its results file, and scoring (this package's
// test checks that it names every key of the results files).
//
//   - spec: bench specs (tasks, sessions, the S_base and S_switch
//     schedules, layouts, the projection check), session assembly by the
//     Switch-SWE rule, tasks from SWE-bench records, the embedded demo pack,
//     and the model calls a schedule makes (Calls);
//   - trajectory: importers of public trajectory formats (mini-swe-agent,
//     OpenHands, Claude Code sessions and logs, Codex rollouts) into
//     OpenCode's chat messages;
//   - chatlog: real session logs people keep (aider, SpecStory, Claude Code,
//     Codex) and their hand labels, as the turns OpenCode would send;
//   - replay: the model-free replay (`rcm bench replay`) through a running
//     proxy against the scripted upstream, its metrics, costs and the
//     compaction call, and its results (results.json, report.md, plots);
//     with --sessions, the replay of real sessions, their metrics against
//     the labels, and the audit of every request;
//   - run: the real-harness runner (`rcm bench run`): checkouts, the
//     metering proxy in front of the upstream, the verifier, runs.jsonl;
//   - harness: the driver interface a real coding agent implements for the
//     runner, with harness/opencode and harness/claudecode;
//   - report: the run report (`rcm bench report`): Res_unint, Res_switch,
//     Gap with bootstrap intervals, costs and flips;
//   - stat, plot, progress: means with intervals and how tables print
//     them, SVG charts, and the progress bar the replay and the runner share;
//   - overhead: the proxy's overhead side by side with Caddy (`rcm bench
//     proxy`).
//
// Dependencies run one way: trajectory <- spec <- replay, run <- report;
// trajectory <- chatlog <- replay;
// harness <- run; nothing here is imported by rcm's core packages, whose
// tests share only internal/ helpers with the bench (internal/chat,
// internal/scripted, internal/client/...).
package bench
