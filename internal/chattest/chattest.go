package chattest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/ci"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
)

// System is a system message.
func System(text string) chat.Message { return chat.Message{Role: chat.RoleSystem, Content: text} }

// User is a user message.
func User(text string) chat.Message { return chat.Message{Role: chat.RoleUser, Content: text} }

// Assistant is an assistant message with text and the given tool calls.
func Assistant(text string, calls ...chat.ToolCall) chat.Message {
	return chat.Message{Role: chat.RoleAssistant, Content: text, ToolCalls: calls}
}

// Call is a call of the tool name. args is the arguments' JSON text when it
// is a string, else a value to encode.
func Call(id, name string, args any) chat.ToolCall {
	s, ok := args.(string)
	if !ok {
		raw, err := json.Marshal(args)
		if err != nil {
			panic(err) // tests pass maps and structs of plain values
		}
		s = string(raw)
	}
	return chat.ToolCall{ID: id, Type: "function", Function: chat.FunctionCall{Name: name, Arguments: s}}
}

// ToolCall is an assistant message with no text calling one tool (see Call).
func ToolCall(id, name string, args any) chat.Message {
	return Assistant("", Call(id, name, args))
}

// ToolResult is the result of the call id.
func ToolResult(id, out string) chat.Message {
	return chat.Message{Role: chat.RoleTool, ToolCallID: id, Content: out}
}

// History is a growing chat history whose messages are encoded once, for
// replays that send every prefix of it.
type History struct {
	raw [][]byte
}

// Add appends messages.
func (h *History) Add(ms ...chat.Message) {
	for _, m := range ms {
		raw, err := json.Marshal(m)
		if err != nil {
			panic(err) // a Message holds only strings
		}
		h.raw = append(h.raw, raw)
	}
}

// Len is the number of messages.
func (h *History) Len() int { return len(h.raw) }

// Body returns the body holding every message.
func (h *History) Body() []byte { return h.Prefix(len(h.raw)) }

// Prefix returns the body holding the first n messages: a compact
// chat-completions body with a model, tools and options around the
// messages, as OpenCode sends it.
func (h *History) Prefix(n int) []byte {
	out := []byte(`{"model":"m1","messages":[`)
	out = append(out, bytes.Join(h.raw[:n], []byte{','})...)
	return append(out, `],"tools":[{"function":{"name":"bash"},"type":"function"}],"stream":true}`...)
}

// Body returns a chat-completions body holding ms (see History.Prefix).
func Body(ms ...chat.Message) []byte {
	var h History
	h.Add(ms...)
	return h.Body()
}

// OpenCodeBody is the first_agent_request capture (OpenCode's real system
// prompt, tools and options) with ms after its system prompt in place of
// its other messages.
func OpenCodeBody(tb testing.TB, ms ...chat.Message) []byte {
	tb.Helper()
	base := capture.Body(tb, "first_agent_request")
	var h History
	h.raw = append(h.raw, []byte(gjson.GetBytes(base, "messages.0").Raw))
	h.Add(ms...)
	arr := append([]byte{'['}, bytes.Join(h.raw, []byte{','})...)
	m := gjson.GetBytes(base, "messages")
	out := append([]byte{}, base[:m.Index]...)
	out = append(out, arr...)
	out = append(out, ']')
	return append(out, base[m.Index+len(m.Raw):]...)
}

// Parse parses an OpenAI chat body, failing the test on error.
func Parse(tb testing.TB, body []byte) *transcript.Transcript {
	tb.Helper()
	tr, err := transcript.Parse(transcript.OpenAIChat, body, transcript.Hints{})
	if err != nil {
		tb.Fatalf("parse: %v", err)
	}
	return tr
}

// Messages returns the raw messages of a body.
func Messages(body []byte) []string {
	var out []string
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		out = append(out, m.Raw)
		return true
	})
	return out
}

// Requests returns the contents of the user messages of a body.
func Requests(body []byte) []string {
	var out []string
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").String() == chat.RoleUser {
			out = append(out, m.Get("content").String())
		}
		return true
	})
	return out
}

// SharedData returns the path of rel under the shared data set (shared/data
// beside the repository, as CI clones it), skipping the test when it is
// absent; under CI (package ci) its absence fails the test.
func SharedData(tb testing.TB, rel ...string) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(append([]string{filepath.Dir(file), "..", "..", "..", "shared", "data"}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		// Data-driven tests never skip in CI.
		ci.Missing(tb, "shared data %s absent (clone shared/ beside the repository): %v", p, err)
	}
	return p
}

// ReadShared returns the contents of rel under the shared data set, skipping
// or failing as SharedData does.
func ReadShared(tb testing.TB, rel ...string) []byte {
	tb.Helper()
	b, err := os.ReadFile(SharedData(tb, rel...))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// EachShared calls fn with every file of a shared data folder matching
// pattern, after checking that there are want of them.
func EachShared(tb testing.TB, dir, pattern string, want int, fn func(path string, b []byte)) {
	tb.Helper()
	files, _ := filepath.Glob(filepath.Join(SharedData(tb, dir), pattern))
	if len(files) != want {
		tb.Fatalf("%s: %d files, want %d", dir, len(files), want)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		fn(f, b)
	}
}

// recordSpan matches an rcm record message's text in a raw body (its
// newlines JSON-escaped).
var recordSpan = regexp.MustCompile(`<rcm-task-state.*?</rcm-task-state>`)

// OutsideRecords is body without its rcm record messages' texts: what it
// forwards of the turns themselves (a record's brief names other tasks'
// requests and files).
func OutsideRecords(body string) string { return recordSpan.ReplaceAllString(body, "") }
