// Package transcript turns a provider request body into one neutral
// Transcript (messages with their raw byte spans, roles, text and tool calls,
// segmented into turns, plus the kind of call) and rebuilds a body from a
// subset of those messages by splicing raw bytes.
//
// It knows nothing of tasks or storage. Everything in a rebuilt body but the
// messages array stays byte-identical to the input, and rebuilding with every
// message kept returns the input unchanged.
//
// ParseReply reads the other direction: the assistant message of an
// upstream answer, streamed (SSE chunks reassembled) or not.
//
// Caveats: a Transcript aliases the body it was parsed from (Message.Raw and
// Transcript.Body share its backing array); callers must not modify the body
// while the Transcript is in use. Only the OpenAI chat-completions format is
// parsed today; other formats report ErrUnsupported and the proxy fails open.
package transcript
