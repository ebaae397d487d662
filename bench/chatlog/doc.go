// Package chatlog reads real session logs that people keep of their work
// with a coding agent, and lays each out as the turns a harness would have
// sent (Session): aider's .aider.chat.history.md, SpecStory's
// .specstory/history/*.md (Cursor and VS Code Copilot chats, in the early
// 2025 format, whose tool steps name no tool and are known by their shape,
// v2 and Markdown v2.1 with its <tool-use> elements, which
// SpecStory's CLI also writes for Claude Code and Codex: each provider
// keeps a tool's arguments its own way, and a subagent's "sidechain"
// messages are left out), Claude
// Code's session JSONL (~/.claude/projects/...) and Codex CLI's rollouts
// (~/.codex/sessions/...). It owns the parsing rules
// of those formats (which lines are a user message, testdata/real-sessions'
// README) and the labels people write for them (labels/NNN.json), checked
// against the parse. Session.Tag rewrites a labelled session as if its
// person had named tasks ([task: T2]), to measure what naming buys.
//
// Each user message is a turn; the assistant's work becomes OpenCode's tool
// calls, each paired with its result: edits and file writes as edit/write
// with an absolute filePath under the session's Workdir, file reads as
// read, shell runs as bash, and the reply text as an assistant message.
// A markdown log that names absolute paths of the machine it ran on (a
// SpecStory export's tool calls often do) ran in the folder they share,
// or above it in the folder its relative names are relative to (an
// absolute path that ends in one of them says where): that is its
// Workdir, so that its relative names sit beside them, as its harness saw
// them, instead of in another checkout. Code fences open and close as
// CommonMark reads them (a fence closes only at as many backticks; a
// diff's fence only at a line of its own), with aider's other fences
// (<source>, <code>, ...) besides.
//
// Aider sends none of the earlier chat after /clear or /reset, and sends
// no session id, so to rcm the turns after one are a new conversation: a
// session of its own (NAME.2, NAME.3, ... after the first), its labels
// rebased to what it holds (a task with no request in it yet is new there;
// needs name only tasks it holds). The label file still covers the whole
// log.
//
// Caveats: the markdown logs do not keep what tools returned (aider's shell
// output, a read file's content); such results are a short placeholder
// that says so. A file aider added to the chat is a read; after /clear
// aider still sends the files in its chat, but the new conversation holds
// no read of those added before it; so is a file it asked to add ("Add
// FILE to the chat?") and was told yes. A command the person ran (/run,
// !) is a bash call whose result is what aider printed of it, when its
// log kept that. In a compacted Claude Code log the
// summary's turn is rebuilt at its request (chat.Rebuild): Session.Lay
// sends only it and what follows from then on, as Claude Code did; a
// Codex rollout's compacted line rebuilds the history where it stands,
// with the person's messages and the summary Codex sent in its place.
// Aider's whole-file edits are told from plain code blocks only when aider
// confirms the file was edited ("> Applied edit to"). Parsers never panic
// on outside input; what they cannot place stays text.
package chatlog
