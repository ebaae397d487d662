package transcript

import (
	"fmt"
	"net/http"
)

// adapter is what one wire format contributes to the neutral Transcript:
// reading a request body, telling its kind and turns, making an Edit valid
// for the format before the splice, and reading the upstream's answer.
// Everything else (fingerprints, Keep, Rebuild's splice) is shared.
type adapter struct {
	// parse fills Format, Body, Messages and the span of the messages array.
	parse func(body []byte) (*Transcript, error)
	// item reads the element of the messages array that opens rest into m
	// and returns its length; extra, when not nil, reads what the format
	// keeps outside the array. A Cache reads a session's next body with
	// them from where it departs from the previous one.
	item  func(m *Message, rest string) (int, error)
	extra func(t *Transcript)
	// kind tells what the call is for from the parsed body and the
	// request's hints (Parse makes a Subagent of an Agent call).
	kind func(t *Transcript, h Hints) Kind
	// opens reports whether message i opens a turn, how, and with what
	// text (the message's Text, which the turn's fingerprint hashes).
	opens func(ms []Message, i int) (TurnKind, string, bool)
	// settle, when not nil, rewrites an Edit into one that yields a valid
	// request of the format (pairing rules, cache markers) before Rebuild
	// splices it. It must not change an Edit that keeps everything as sent.
	settle func(t *Transcript, e Edit) (Edit, error)
	// reply reads the assistant message of an upstream answer into m, from
	// a server-sent event stream or one JSON object.
	reply func(body []byte, sse bool, m *Message)
}

// adapters holds the formats Parse reads; a nil entry is unsupported.
var adapters = map[Format]*adapter{
	OpenAIChat:        {parse: parseChat, item: chatItem, kind: chatKind, opens: opensTurn, reply: chatReply},
	AnthropicMessages: {parse: parseMessages, item: messagesItem, kind: messagesKind, opens: opensMessagesTurn, settle: settleMessages, reply: messagesReply},
}

// Hints are what a request says of its call outside its body (in its
// headers: Format.Hints) that the call's kind depends on. The zero value
// says nothing.
type Hints struct {
	// Subagent: the harness marked the call as a child session's; an
	// agent call is then a Subagent one.
	Subagent bool
	// CodexTurn is Codex's turn metadata, a JSON object, read when the
	// body carries no copy.
	CodexTurn string
}

// Headers by which harnesses mark a call.
const (
	// headerParentSession marks a child session's calls (OpenCode).
	headerParentSession = "X-Parent-Session-Id"
	// headerAgentID marks a subagent's calls, which share the parent's
	// session id (Claude Code).
	headerAgentID = "X-Claude-Code-Agent-Id"
	// headerCodexTurn carries Codex's turn metadata.
	headerCodexTurn = "X-Codex-Turn-Metadata"
)

// Hints reads the Hints of a request in format f from its headers (h may
// be nil): a subagent by the marker its harness sends (OpenCode's parent
// session id, whichever provider it goes through; Claude Code's agent id,
// on Messages only), and Codex's turn metadata.
func (f Format) Hints(h http.Header) Hints {
	sub := h.Get(headerParentSession) != "" || f == AnthropicMessages && h.Get(headerAgentID) != ""
	return Hints{Subagent: sub, CodexTurn: h.Get(headerCodexTurn)}
}

// Parse reads a request body of format f, with what the request says of
// the call outside the body.
func Parse(f Format, body []byte, h Hints) (*Transcript, error) {
	a := adapters[f]
	if a == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, f)
	}
	t, err := a.parse(body)
	if err != nil {
		return nil, err
	}
	a.finish(t, h)
	return t, nil
}

// finish tells the kind and the turns of t, whose messages are read.
func (a *adapter) finish(t *Transcript, h Hints) { a.finishFrom(t, h, nil, nil, 0) }

// finishFrom is finish with the turns opened before message from known
// (see segment).
func (a *adapter) finishFrom(t *Transcript, h Hints, turns []Turn, fps []Fingerprint, from int) {
	t.Kind = a.kind(t, h)
	if t.Kind == Agent && h.Subagent {
		t.Kind = Subagent
	}
	t.Turns, t.Preamble, t.fps = segment(t.Messages, a.opens, turns, fps, from)
}

// ParseReply returns the assistant message of an upstream answer in format
// f (see ParseReply for chat completions); ok is false when nothing parses
// or the format is not supported.
func (f Format) ParseReply(body []byte, sse bool) (Message, bool) {
	a := adapters[f]
	if a == nil {
		return Message{}, false
	}
	m := Message{Role: "assistant"}
	a.reply(body, sse, &m)
	return m, m.text != "" || len(m.ToolCalls) > 0
}
