package transcript

import (
	"bytes"
	"errors"
	"strings"

	"github.com/tidwall/gjson"
)

// Format is a provider wire format.
type Format int

const (
	// OpenAIChat is POST /v1/chat/completions.
	OpenAIChat Format = iota
	// AnthropicMessages is POST /v1/messages.
	AnthropicMessages
	// OpenAIResponses is POST /v1/responses and its WebSocket frames.
	OpenAIResponses
)

func (f Format) String() string {
	switch f {
	case OpenAIChat:
		return "openai-chat"
	case AnthropicMessages:
		return "anthropic-messages"
	case OpenAIResponses:
		return "openai-responses"
	}
	return "unknown"
}

// FormatOf returns the format of the model-call endpoint at path (below the
// API root, e.g. "/v1/chat/completions"); ok is false for other routes.
func FormatOf(path string) (f Format, ok bool) {
	switch path {
	case "/v1/chat/completions":
		return OpenAIChat, true
	case "/v1/messages":
		return AnthropicMessages, true
	case "/v1/responses":
		return OpenAIResponses, true
	}
	return 0, false
}

// Kind is what a call is for, as far as the body and headers tell.
type Kind int

const (
	// Agent is an ordinary agent turn: routed and remembered.
	Agent Kind = iota
	// Title is the harness's title-generator side call.
	Title
	// Compaction is the harness's summarisation call.
	Compaction
	// Subagent is an agent call of a child session (x-parent-session-id).
	Subagent
	// Prewarm is a Responses call that generates nothing (Codex's
	// WebSocket warm-up: generate false, empty input).
	Prewarm
	// RemoteCompaction is a Responses call that asks the provider to
	// compact the history itself (a compaction_trigger item); its answer
	// is opaque, so it passes through.
	RemoteCompaction
)

func (k Kind) String() string {
	switch k {
	case Agent:
		return "agent"
	case Title:
		return "title"
	case Compaction:
		return "compaction"
	case Subagent:
		return "subagent"
	case Prewarm:
		return "prewarm"
	case RemoteCompaction:
		return "remote-compaction"
	}
	return "unknown"
}

// Side reports whether calls of this kind are side calls that pass through
// untouched and never create tasks.
func (k Kind) Side() bool {
	return k == Title || k == Compaction || k == Prewarm || k == RemoteCompaction
}

// Errors returned by Parse. The proxy forwards such bodies unchanged.
var (
	ErrNotJSON     = errors.New("transcript: body is not valid JSON")
	ErrNotObject   = errors.New("transcript: body is not a JSON object")
	ErrNoMessages  = errors.New("transcript: body has no messages array")
	ErrBadMessage  = errors.New("transcript: message is not an object with a role")
	ErrUnsupported = errors.New("transcript: unsupported format")
)

// ToolCall is one function call requested by an assistant message.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // raw JSON text of the arguments, as sent
}

// ToolResult is one tool result block of a message.
type ToolResult struct {
	ID      string // the tool call it answers
	content string // raw JSON of its content, decoded by Text
}

// Text returns the result's text: a string, or its text blocks joined.
func (r ToolResult) Text() string { return contentText(gjson.Parse(r.content)) }

// Message is one element of the messages array.
type Message struct {
	Index      int
	Role       string
	Raw        []byte // the element's bytes in the body, exactly as sent
	ToolCalls  []ToolCall
	ToolCallID string // set on role "tool" results
	// Results are the tool results the message carries as blocks
	// (Anthropic's tool_result), in order.
	Results []ToolResult

	content string // the content field's raw JSON, decoded by Text on demand
	// contentAt is content's offset in Raw when Parse read it from there;
	// 0 otherwise (Raw opens with "{", so no member starts at 0).
	contentAt int
	text      string // decoded text of a message built from an answer
	// at is Raw's offset in the body when Parse read it from there; 0
	// otherwise (the body opens with "{", so no element starts at 0).
	at int
}

// Text returns the message's text content, parts' texts joined by "\n".
// It is decoded on each call, not at parse time: most of a long history is
// tool output that a call never reads, so Parse leaves it encoded.
func (m *Message) Text() string {
	if m.content == "" {
		return m.text
	}
	return contentText(gjson.Parse(m.content))
}

// System reports whether the message instructs rather than converses: the
// roles "system" and "developer" (what a Responses harness injects for
// every task is "developer").
func (m *Message) System() bool { return m.Role == "system" || m.Role == "developer" }

// Content returns the raw JSON of the member the message's text is read
// from (a chat message's "content") and its offset in Raw, so that a
// caller can read or replace part of it without decoding the whole; ok is
// false when Raw does not hold it (a message built from an answer, a
// message with no such member).
func (m *Message) Content() (raw []byte, off int, ok bool) {
	off = m.contentAt
	if m.content == "" || off <= 0 || off+len(m.content) > len(m.Raw) {
		return nil, 0, false
	}
	return m.Raw[off : off+len(m.content)], off, true
}

// head returns the first n bytes of the message's text (all of it when
// shorter), decoding no more of a plain string content than that.
func (m *Message) head(n int) string {
	if first, _, _, ok := m.TextEnds(n, 0); ok {
		return first
	}
	return m.Text()
}

// TextEnds returns the first head and the last tail bytes of the
// message's text and the text's length, decoding nothing else, for a
// long text read only at its ends (a tool output's exit status, a cut);
// head and tail may overlap when the text is short. ok is false when the
// content is not a JSON string free of \u escapes (the usual tool output):
// Text then reads it.
func (m *Message) TextEnds(head, tail int) (first, last string, n int, ok bool) {
	c, _, ok := m.Content()
	if !ok || len(c) < 2 || c[0] != '"' || strings.Contains(alias(c), `\u`) {
		return "", "", 0, false
	}
	s := c[1 : len(c)-1] // valid JSON: every backslash starts a two-byte escape
	n = len(s)
	for i := 0; ; {
		j := bytes.IndexByte(s[i:], '\\')
		if j < 0 {
			break
		}
		i += j + 2
		n--
	}
	// The offset in s of the last tail decoded bytes.
	at, i, d := max(n-tail, 0), 0, 0
	for {
		j := bytes.IndexByte(s[i:], '\\')
		if j < 0 || d+j >= at {
			i += at - d
			break
		}
		i, d = i+j+2, d+j+1
	}
	return unescapeN(s, 0, head), unescapeN(s, i, tail), n, true
}

// unescapeN decodes up to k bytes of the JSON string contents s (no \u
// escapes) from offset i, which is not inside an escape.
func unescapeN(s []byte, i, k int) string {
	out := make([]byte, 0, min(k, len(s)-i))
	for len(out) < k && i < len(s) {
		c := s[i]
		i++
		if c == '\\' && i < len(s) {
			switch c = s[i]; c {
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			}
			i++
		}
		out = append(out, c)
	}
	return string(out)
}

// TurnKind tells how a turn began.
type TurnKind int

const (
	// Request: a turn opened by a user request.
	Request TurnKind = iota
	// Summary: the harness's post-compaction recap (a synthetic user
	// question answered by the summary); not a request of any task.
	Summary
)

// Turn is a run of messages opened by a user request (or a post-compaction
// summary) and holding everything up to the next one: assistant messages,
// tool results and the harness's synthetic continuation prompts.
type Turn struct {
	Kind  TurnKind
	Start int // index of the opening message
	End   int // one past the last message
}

// Request returns the opening message of the turn.
func (t Turn) Request(tr *Transcript) *Message { return &tr.Messages[t.Start] }

// Transcript is a parsed request.
type Transcript struct {
	Format   Format
	Kind     Kind
	Body     []byte
	Messages []Message
	// SessionKey is the conversation's id as the body names it (the
	// Responses API's prompt_cache_key), "" when it names none.
	SessionKey string
	// Preamble is the number of leading messages before the first turn
	// (system prompts); they are always kept.
	Preamble int
	Turns    []Turn

	arrStart, arrEnd int           // span of the messages array, brackets included
	fps              []Fingerprint // per turn, computed by Parse
	reused           int           // see Reused
}

// Reused returns how many leading bytes of the body a Cache took over,
// parsed, from the session's previous call (0: the body was parsed whole).
func (t *Transcript) Reused() int { return t.reused }

// Instructions returns the system prompt a format carries outside its
// messages: Anthropic's "system" field, the Responses API's "instructions";
// "" for chat completions, whose system prompt is a message.
func (t *Transcript) Instructions() string {
	switch t.Format {
	case AnthropicMessages:
		return contentText(gjson.GetBytes(t.Body, "system"))
	case OpenAIResponses:
		return gjson.GetBytes(t.Body, "instructions").String()
	}
	return ""
}

// Current returns the last turn, the one the call is about, or nil when the
// transcript has no turn.
func (t *Transcript) Current() *Turn {
	if len(t.Turns) == 0 {
		return nil
	}
	return &t.Turns[len(t.Turns)-1]
}

// chatKind classifies a chat-completions call: OpenCode's side calls by
// their system prompt.
func chatKind(t *Transcript, _ Hints) Kind { return classify(t) }
