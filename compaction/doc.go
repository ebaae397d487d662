// Package compaction owns token estimates, fitting a routed context under a
// budget, and the task-aware rewriting of a harness's own compaction call.
//
// Estimates are byte-based (about four bytes a token): consistent across
// modes, which is what budgets and bench ratios need, but not a tokenizer.
//
// Around a compaction the proxy uses it in three steps:
//
//   - Rewrite turns OpenCode's summarisation call (system prompt "You are a
//     context summarization agent", the conversation inside <conversation>
//     in the last user message) into one that asks for a "## Task <id>"
//     section per task and lists each task's requirements (verbatim) and
//     unfinished items from its record. Only the prompt's content changes;
//     with fewer than two tasks nothing does. Claude Code's summarisation
//     call (its instruction in, or as, the last user message) gets the same
//     brief, asked inside the <summary> block Claude Code requires.
//   - SplitSummary attributes the summary that comes back to its tasks.
//   - ScopeSummary, on later calls, forwards for task z only the summary's
//     general text and z's section in place of the whole recap (OpenCode's
//     answer to its recap question, or the summary inside Claude Code's
//     continuation message, on whichever wire it comes, whose framing
//     stays).
//
// Fit keeps an Edit's body under a token budget by condensing, then
// dropping, whole turns before the current one.
//
// Caveats: the model may ignore the section format; SplitSummary then finds
// no sections and ScopeSummary keeps the summary whole (the records remain
// the ground truth of each task's state). Fit cuts tool outputs and
// assistant texts but never tool-call arguments (a cut would leave invalid
// JSON in them), so a turn made of huge tool calls only shrinks by being
// dropped. Condensed chat messages carry their content as one string even
// when the original was an array of parts; Anthropic messages are cut
// inside their blocks, which all stay (tool_use and tool_result pair by
// block).
package compaction
