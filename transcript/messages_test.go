package transcript

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/tidwall/gjson"
)

// messagesCapture is a real Anthropic Messages request: Claude Code's
// (name as in testdata/claude-code) or OpenCode's Anthropic provider's
// ("opencode/anthropic_messages_request").
type messagesCapture struct {
	name string
	body []byte
	h    http.Header
	path string
}

func messagesCaptures(t testing.TB) []messagesCapture {
	t.Helper()
	var out []messagesCapture
	for _, name := range capture.NamesIn(t, capture.ClaudeCodeDir()) {
		r := capture.LoadIn(t, capture.ClaudeCodeDir(), name)
		out = append(out, messagesCapture{name, r.Body, r.Header, r.Path})
	}
	r := capture.Load(t, "anthropic_messages_request")
	out = append(out, messagesCapture{"opencode_anthropic_messages_request", r.Body, r.Header, r.Path})
	if len(out) < 15 {
		t.Fatalf("found %d Messages captures", len(out))
	}
	return out
}

func TestMessagesGoldenCaptures(t *testing.T) {
	for _, c := range messagesCaptures(t) {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Parse(AnthropicMessages, c.body, AnthropicMessages.Hints(c.h))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tr, c.body, filepath.Join("testdata", "messages", c.name+".golden"))
		})
	}
}

func TestMessagesKinds(t *testing.T) {
	want := map[string]Kind{
		"first_agent_request":             Agent,
		"tool_result_request":             Agent,
		"compaction_manual_request":       Compaction,
		"compaction_auto_request":         Compaction,
		"after_manual_compaction_request": Agent,
		"after_autocompaction_request":    Agent,
		"subagent_request_with_agent_id":  Subagent,
		"parent_after_subagent_request":   Agent,
	}
	for name, kind := range want {
		r := capture.LoadIn(t, capture.ClaudeCodeDir(), name)
		tr, err := Parse(AnthropicMessages, r.Body, AnthropicMessages.Hints(r.Header))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tr.Kind != kind {
			t.Errorf("%s: kind %s, want %s", name, tr.Kind, kind)
		}
	}
}

// TestMessagesTurns: a user message of tool results is no request; the
// summary after a compaction opens a Summary turn; role "system" entries
// in messages are kept wherever they stand when their turn is dropped.
func TestMessagesTurns(t *testing.T) {
	r := capture.LoadIn(t, capture.ClaudeCodeDir(), "resume_by_id_request")
	tr, err := Parse(AnthropicMessages, r.Body, Hints{})
	if err != nil {
		t.Fatal(err)
	}
	var reqs []string
	for _, tn := range tr.Turns {
		reqs = append(reqs, tn.Request(tr).Text())
	}
	want := []string{"Create hello.txt. RUN: echo hello-from-claude > hello.txt", "Thanks. Now just say goodbye.", "Show the file. RUN: cat hello.txt"}
	if strings.Join(reqs, "|") != strings.Join(want, "|") {
		t.Fatalf("turn requests %q, want %q", reqs, want)
	}
	kept := tr.Keep([]int{2})
	for i, m := range tr.Messages {
		if m.Role == "system" && !contains(kept, i) {
			t.Errorf("system message %d dropped", i)
		}
	}
	r = capture.LoadIn(t, capture.ClaudeCodeDir(), "after_autocompaction_request")
	if tr, err = Parse(AnthropicMessages, r.Body, Hints{}); err != nil {
		t.Fatal(err)
	}
	if len(tr.Turns) != 2 || tr.Turns[0].Kind != Summary || tr.Turns[1].Kind != Request {
		t.Fatalf("after compaction: turns %+v", tr.Turns)
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// breakpoints counts cache_control markers in a Messages body.
func breakpoints(body []byte) int {
	return strings.Count(string(body), `"cache_control"`)
}

// TestMessagesBreakpointMoves: dropping a message whose block carried a
// cache_control breakpoint puts it on the last block of the nearest kept
// message before it; the count never grows.
func TestMessagesBreakpointMoves(t *testing.T) {
	body := []byte(`{"model":"m","system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[` +
		`{"role":"user","content":"[task: a] fix x"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"sig"},{"type":"text","text":"done"}]},` +
		`{"role":"user","content":[{"type":"text","text":"[task: b] other","cache_control":{"type":"ephemeral","ttl":"1h"}}]},` +
		`{"role":"assistant","content":"ok b"},` +
		`{"role":"user","content":"[task: a] again","cache_control":null}],"stream":true}`)
	tr, err := Parse(AnthropicMessages, body, Hints{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Turns) != 3 {
		t.Fatalf("turns %d", len(tr.Turns))
	}
	out, err := tr.Rebuild(Edit{Keep: tr.Keep([]int{0, 2})})
	if err != nil {
		t.Fatal(err)
	}
	if !gjson.ValidBytes(out) {
		t.Fatalf("invalid JSON: %s", out)
	}
	moved := gjson.GetBytes(out, "messages.1.content.1.cache_control").Raw
	if moved != `{"type":"ephemeral","ttl":"1h"}` {
		t.Fatalf("breakpoint not moved to the kept assistant's last block: %s", out)
	}
	if th := gjson.GetBytes(out, "messages.1.content.0").Raw; th != `{"type":"thinking","thinking":"t","signature":"sig"}` {
		t.Errorf("thinking block changed: %s", th)
	}
	if breakpoints(out) > breakpoints(body) {
		t.Errorf("breakpoints grew: %d > %d", breakpoints(out), breakpoints(body))
	}
	if got := gjson.GetBytes(out, "model").Raw + gjson.GetBytes(out, "system").Raw + gjson.GetBytes(out, "stream").Raw; got != `"m"`+`[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]`+`true` {
		t.Errorf("fields outside messages changed: %s", got)
	}
}

// TestMessagesFoldsRecordAfterResults: a user message inserted before a
// tool_result message goes into it, after the results.
func TestMessagesFoldsRecordAfterResults(t *testing.T) {
	body := []byte(`{"messages":[{"role":"user","content":"fix x"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.go"},{"type":"text","text":"and y"}]}]}`)
	tr, err := Parse(AnthropicMessages, body, Hints{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Turns) != 1 {
		t.Fatalf("a tool_result message opened a turn: %+v", tr.Turns)
	}
	out, err := tr.Rebuild(Edit{Keep: []int{0, 1, 2}, Insert: []Insert{{Before: 2, Raw: []byte(`{"role":"user","content":"record"}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"tool_result","tool_use_id":"t1","content":"a.go"},{"type":"text","text":"record"},{"type":"text","text":"and y"}]`
	if got := gjson.GetBytes(out, "messages.2.content").Raw; got != want || gjson.GetBytes(out, "messages.#").Int() != 3 {
		t.Fatalf("got %s", out)
	}
	// Before a text request the record stays a message of its own.
	out, err = tr.Rebuild(Edit{Keep: []int{0, 1, 2}, Insert: []Insert{{Before: 0, Raw: []byte(`{"role":"user","content":"record"}`)}}})
	if err != nil || gjson.GetBytes(out, "messages.#").Int() != 4 {
		t.Fatalf("got %s (%v)", out, err)
	}
}

func TestMessagesReply(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(capture.ClaudeCodeDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	m, ok := AnthropicMessages.ParseReply(read("fake_reply_tool_use.sse.txt"), true)
	if !ok || len(m.ToolCalls) != 1 || m.ToolCalls[0].Name != "Bash" || !gjson.Valid(m.ToolCalls[0].Arguments) ||
		gjson.Get(m.ToolCalls[0].Arguments, "command").String() == "" || m.ToolCalls[0].ID == "" {
		t.Fatalf("tool_use reply: %+v %v", m, ok)
	}
	m, ok = AnthropicMessages.ParseReply(read("fake_reply_text.sse.txt"), true)
	if !ok || m.Text() == "" || len(m.ToolCalls) != 0 {
		t.Fatalf("text reply: %+v", m)
	}
	m, ok = AnthropicMessages.ParseReply([]byte(`{"type":"message","role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"hi"},{"type":"tool_use","id":"u","name":"Read","input":{"file_path":"a"}}]}`), false)
	if !ok || m.Text() != "hi" || len(m.ToolCalls) != 1 || m.ToolCalls[0].Arguments != `{"file_path":"a"}` {
		t.Fatalf("message reply: %+v", m)
	}
}

// FuzzMessages: any body parses or errors without panicking, and any
// choice of kept turns with a record inserted before the current turn
// rebuilds into valid JSON with no more breakpoints than were sent, whose
// fields other than messages are unchanged.
func FuzzMessages(f *testing.F) {
	for _, c := range messagesCaptures(f) {
		f.Add(c.body, uint16(0xffff))
		f.Add(c.body, uint16(1))
	}
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[]}]},{"role":"user","content":"a","cache_control":1}]}`), uint16(2))
	f.Fuzz(func(t *testing.T, body []byte, mask uint16) {
		tr, err := Parse(AnthropicMessages, body, Hints{})
		if err != nil {
			return
		}
		var turns []int
		for i := range tr.Turns {
			if mask&(1<<(i%16)) != 0 || i == len(tr.Turns)-1 {
				turns = append(turns, i)
			}
		}
		e := Edit{Keep: tr.Keep(turns)}
		if cur := tr.Current(); cur != nil {
			e.Insert = []Insert{{Before: cur.Start, Raw: []byte(`{"role":"user","content":"record"}`)}}
		}
		out, err := tr.Rebuild(e)
		if err != nil {
			return
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("invalid JSON from %s:\n%s", body, out)
		}
		if breakpoints(out) > breakpoints(body) {
			t.Fatalf("breakpoints grew: %s", out)
		}
		for _, k := range []string{"model", "system", "tools", "metadata"} {
			if a, b := gjson.GetBytes(body, k).Raw, gjson.GetBytes(out, k).Raw; a != b {
				t.Fatalf("%s changed", k)
			}
		}
	})
}

// TestMessagesOpenCodeKinds: OpenCode's side calls through its Anthropic
// provider carry their prompt in the system field; its recap after a
// compaction opens a Summary turn as in chat.
func TestMessagesOpenCodeKinds(t *testing.T) {
	for body, want := range map[string]Kind{
		`{"system":[{"type":"text","text":"You are a title generator. You output ONLY a thread title."}],"messages":[{"role":"user","content":"x"}]}`:    Title,
		`{"system":"You are a context summarization agent.","messages":[{"role":"user","content":"<conversation>x</conversation>"}]}`:                    Compaction,
		`{"system":"You are opencode.","messages":[{"role":"user","content":"x"}]}`:                                                                      Agent,
		`{"messages":[{"role":"system","content":"You are a context summarization agent."},{"role":"user","content":"<conversation>x</conversation>"}]}`: Compaction,
	} {
		tr, err := Parse(AnthropicMessages, []byte(body), Hints{})
		if err != nil || tr.Kind != want {
			t.Errorf("%s: kind %v (%v), want %s", body, tr.Kind, err, want)
		}
	}
	tr, err := Parse(AnthropicMessages, []byte(`{"messages":[{"role":"user","content":"What did we do so far?"},{"role":"assistant","content":[{"type":"text","text":"## Task a"}]},{"role":"user","content":[{"type":"text","text":"Continue if you have next steps"}]},{"role":"user","content":"next"}]}`), Hints{})
	if err != nil || len(tr.Turns) != 2 || tr.Turns[0].Kind != Summary || tr.Turns[1].Start != 3 {
		t.Fatalf("turns %+v (%v)", tr.Turns, err)
	}
}
