package transcript

import (
	"strings"

	"github.com/tidwall/gjson"
)

// The Responses API (POST /v1/responses, and the response.create frames of
// its WebSocket mode) sends the conversation as "input", an array of items.
// Each item becomes one Message whose Raw is the item's bytes, so Rebuild
// splices the input array as it splices chat messages. The neutral Role of
// an item is what it plays in the conversation, not always its wire role:
//   - message items keep their role (user, assistant, developer, system);
//   - function_call, custom_tool_call, reasoning and every other item the
//     model produced (web_search_call, item_reference, ...) are "assistant":
//     they belong to the turn they follow, reasoning (encrypted_content
//     included) with it, byte for byte;
//   - function_call_output and custom_tool_call_output (any *_output) are
//     "tool", paired with their call by call_id;
//   - what the harness injects for every task is "developer", so that it is
//     always kept and never opens a turn: the additional_tools item, the
//     opaque compaction item of remote compaction, and Codex's user-role
//     context messages (<environment_context>, AGENTS.md instructions, the
//     post-compaction summary "Another language model started ...").
//
// Everything outside "input" (instructions, tools, reasoning, include, text,
// client_metadata, previous_response_id, unknown fields) stays byte-identical.

// Texts by which Codex marks its own messages and calls.
const (
	codexCompaction = "You are performing a CONTEXT CHECKPOINT COMPACTION"
	codexSummary    = "Another language model started to solve this problem"
	codexTitle      = "Generate a concise, single-line task title"
)

// codexContext are the openings of the user-role messages Codex injects as
// context rather than as requests.
var codexContext = []string{"<environment_context>", "# AGENTS.md instructions", "<user_instructions>", codexSummary}

// codexTurn is the client_metadata member of the body that holds Codex's
// turn metadata (the header's copy: Hints.CodexTurn).
var codexTurn = strings.ToLower(headerCodexTurn)

func init() {
	// Registered here rather than in adapters' literal so that each format
	// stays in its own files.
	adapters[OpenAIResponses] = &adapter{parse: parseResponses, item: responsesItem, extra: responsesExtra,
		kind: responsesKind, opens: opensTurn, reply: responsesReply}
}

func parseResponses(body []byte) (*Transcript, error) {
	t, input, err := parseMember(body, OpenAIResponses, `"input"`)
	if err != nil {
		return nil, err
	}
	responsesExtra(t)
	switch {
	case strings.HasPrefix(input, `"`):
		// A string input is one user request; Rebuild writes it back as
		// an item when anything is added around it.
		m := Message{Role: "user", content: input}
		m.Raw = append(append([]byte(`{"role":"user","content":`), input...), '}')
		t.Messages = []Message{m}
	case strings.HasPrefix(input, "["):
		if err := t.readArray(input, responsesItem); err != nil {
			return nil, err
		}
	default:
		return nil, ErrNoMessages
	}
	return t, nil
}

// responsesExtra reads what the Responses API names outside its input.
func responsesExtra(t *Transcript) {
	if k := gjson.GetBytes(t.Body, "prompt_cache_key"); k.Type == gjson.String {
		t.SessionKey = k.Str
	}
}

// responsesItem reads the input item that opens rest into m, and returns
// its length.
func responsesItem(m *Message, rest string) (int, error) {
	if !strings.HasPrefix(rest, "{") {
		return 0, ErrBadMessage
	}
	var typ, role, callID, name, args string
	n := members(rest, func(key, val string, off int) bool {
		switch key {
		case `"type"`:
			typ = gjson.Parse(val).String()
		case `"role"`:
			if r := gjson.Parse(val); r.Type == gjson.String {
				role = r.Str
			}
		case `"content"`, `"output"`:
			m.content, m.contentAt = val, off
		case `"call_id"`:
			callID = gjson.Parse(val).String()
		case `"name"`:
			name = gjson.Parse(val).String()
		case `"arguments"`, `"input"`:
			args = gjson.Parse(val).String()
		}
		return true
	})
	switch {
	case typ == "additional_tools", typ == "compaction", typ == "compaction_summary", typ == "compaction_trigger":
		m.Role, m.content = "developer", ""
	case typ == "message" || typ == "":
		if role == "" {
			return 0, ErrBadMessage
		}
		m.Role = role
		if role == "user" && CodexContext(m.Text()) {
			m.Role = "developer"
		}
	case typ == "function_call_output" || strings.HasSuffix(typ, "_output"):
		m.Role, m.ToolCallID = "tool", callID
	case typ == "function_call", typ == "custom_tool_call":
		m.Role, m.content = "assistant", ""
		m.ToolCalls = []ToolCall{{ID: callID, Name: name, Arguments: args}}
	default:
		// reasoning and anything else the model produced: part of its turn,
		// no text of its own (a reasoning summary is not an answer).
		m.Role, m.content = "assistant", ""
	}
	return n, nil
}

// Summaries returns the indexes of the messages that carry a
// post-compaction summary for every task outside a Summary turn: Codex's
// "Another language model started ..." message, which comes after the
// request it precedes in time and so opens no turn (on the Responses and
// the chat wire).
func (t *Transcript) Summaries() []int {
	var out []int
	for i := range t.Messages {
		m := &t.Messages[i]
		if m.Role == "developer" && gjson.GetBytes(m.Raw, "role").Str == "user" &&
			strings.HasPrefix(strings.TrimLeft(m.Text(), " \t\r\n"), codexSummary) {
			out = append(out, i)
		}
	}
	return out
}

// CodexRepos returns the git repositories Codex's turn metadata lists (its
// "workspaces": the root of the repository the turn works in, keyed by
// path, with its head), and whether the body carries that metadata at all
// (client_metadata; Codex 0.171 sends it on every call). Codex lists none
// when its working directory is in no repository.
func (t *Transcript) CodexRepos() (roots []string, ok bool) {
	if t.Format != OpenAIResponses {
		return nil, false
	}
	meta := gjson.GetBytes(t.Body, "client_metadata").Get(codexTurn)
	if meta.Type != gjson.String {
		return nil, false
	}
	turn := gjson.Parse(meta.Str)
	if !turn.IsObject() {
		return nil, false
	}
	turn.Get("workspaces").ForEach(func(k, _ gjson.Result) bool {
		roots = append(roots, k.String())
		return true
	})
	return roots, true
}

// CodexContext reports whether a user-role message is one Codex injects
// as context (its environment, AGENTS.md instructions, a compaction's
// summary) rather than a request.
func CodexContext(text string) bool {
	text = strings.TrimLeft(text, " \t\r\n")
	for _, p := range codexContext {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// responsesKind tells what the call is for: Codex says it in its turn
// metadata (request_kind prewarm or compaction, thread_source
// thread_title); a prewarm frame also says generate:false, a remote
// compaction ends in a compaction_trigger item, and the prompts name the
// rest (Codex's and OpenCode's, the latter in a system message or in
// instructions).
func responsesKind(t *Transcript, h Hints) Kind {
	f := gjson.GetManyBytes(t.Body, "client_metadata", "instructions", "generate")
	meta, instructions, generate := f[0], f[1], f[2]
	// The body's copy first: over a WebSocket the headers are the
	// handshake's (request_kind prewarm) for every frame.
	turn := gjson.Parse(meta.Get(codexTurn).String())
	if !turn.IsObject() {
		turn = gjson.Parse(h.CodexTurn)
	}
	last := ""
	if n := len(t.Messages); n > 0 {
		last = gjson.GetBytes(t.Messages[n-1].Raw, "type").String()
	}
	switch {
	case turn.Get("request_kind").String() == "prewarm", generate.Type == gjson.False:
		return Prewarm
	case last == "compaction_trigger":
		return RemoteCompaction
	case turn.Get("thread_source").String() == "thread_title":
		return Title
	case turn.Get("request_kind").String() == "compaction":
		return Compaction
	}
	if m := lastUser(t); m != nil {
		switch text := strings.TrimLeft(m.Text(), " \t\r\n"); {
		case strings.HasPrefix(text, codexCompaction):
			return Compaction
		case strings.HasPrefix(text, codexTitle):
			return Title
		}
	}
	if s := instructions; s.Type == gjson.String {
		switch {
		case strings.HasPrefix(s.Str, titlePrompt):
			return Title
		case strings.HasPrefix(s.Str, compactionPrompt):
			return Compaction
		}
	}
	return classify(t)
}

func lastUser(t *Transcript) *Message {
	for i := len(t.Messages) - 1; i >= 0; i-- {
		if t.Messages[i].Role == "user" {
			return &t.Messages[i]
		}
	}
	return nil
}
