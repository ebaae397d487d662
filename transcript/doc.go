// Package transcript turns a provider request body into one neutral
// Transcript (messages with their raw byte spans, roles, text and tool calls,
// segmented into turns, plus the kind of call) and rebuilds a body from a
// subset of those messages by splicing raw bytes.
//
// Parse reads the body and the few facts the call's kind takes from outside
// it (Hints: a subagent's marker, Codex's turn metadata), which
// Format.Hints reads from the request's headers. A Cache parses a session's
// next body from where it departs from the previous one (the messages
// before it are taken over, the rest validated and read) and returns what
// Parse would.
//
// It knows nothing of tasks or storage. Everything in a rebuilt body but the
// messages array stays byte-identical to the input, and rebuilding with every
// message kept returns the input unchanged.
//
// ParseReply reads the other direction: the assistant message of an
// upstream answer, streamed (SSE chunks reassembled) or not.
//
// Each wire format is an adapter (adapter.go): it parses its body into the
// neutral Transcript, tells the call's kind and where turns open, settles
// an Edit into a valid request of the format before the shared splice, and
// reads its answers (Format.ParseReply). A format without an adapter
// reports ErrUnsupported and the proxy fails open. A harness's
// post-compaction recap opens a Summary turn: OpenCode's recap question
// and its answer, and Claude Code's message holding its summary on any
// wire (Claude Code behind a router that speaks chat completions sends it
// there).
//
// The Responses adapter (responses*.go) reads "input" items as messages:
// each item's neutral Role is the part it plays (tool calls and reasoning
// are "assistant", outputs "tool", what the harness injects for every task
// "developer"), so that turns, Keep and the records work on it unchanged.
// Codex's injected user messages (its environment context, instructions
// and post-compaction summary) are "developer" on the chat wire too, which
// Codex speaks to a provider whose wire_api is "chat".
// Conversation expands the chained frames of its WebSocket mode.
//
// Caveats: a Transcript aliases the body it was parsed from (Message.Raw and
// Transcript.Body share its backing array); callers must not modify the body
// while the Transcript is in use, nor ever once a Cache holds it (it keeps
// a session's last transcript, and reads the next one against it).
// Transcripts are read-only after Parse: a Cache hands their messages over
// to the next call's.
package transcript
