// Package bench measures switch gaps: bench specs (tasks, sessions, the
// S_base and S_switch schedules), importers of public trajectory formats,
// session assembly by the Switch-SWE rule, the per-call replay of a schedule
// (Spec.Calls) and the embedded demo pack. The spec format is documented in
// SPEC.md beside this file.
//
// Importers convert what agents recorded into what OpenCode would send:
// OpenAI chat messages with native tool calls and role "tool" results.
// They never panic on outside input: unusable records come back as Skip
// values and the import goes on.
//
// Caveats: the bench talks to a running proxy over HTTP as a harness would;
// it must not import proxy internals. Replayed tool outputs are the recorded
// ones; nothing is executed. The mini-swe-agent conversion drops assistant
// messages that broke that agent's one-bash-block format (and the error reply
// they drew), since native tool calling has no such exchange.
package bench
