// Package trajectory converts what agents recorded into what OpenCode would
// send: OpenAI chat messages (internal/chat) with native tool calls and
// role "tool" results. It reads mini-swe-agent trajectories (ReadMiniSWE),
// OpenHands function-calling runs (ReadOpenHands), Claude Code sessions
// (ReadClaudeCode, and the JSONL logs Claude Code writes: ReadClaudeCodeLog)
// and Codex CLI rollouts (ReadCodexLog), and checks a history's tool calls
// (ValidateMessages).
//
// Importers never panic on outside input: unusable records come back as
// Skip values and the import goes on.
//
// Caveats: the mini-swe-agent conversion drops assistant messages that broke
// that agent's one-bash-block format (and the error reply they drew), since
// native tool calling has no such exchange. A run cut short gets a
// "(no result recorded)" result for each unanswered call. A Claude Code
// log's rewound branches are left out only where its parentUuid chain is
// whole; a chain that breaks leaves the file read in order, abandoned
// branches and all.
package trajectory
