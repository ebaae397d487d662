package transcript_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/internal/scripted"
	"github.com/rcm-dev/rcm/transcript"
)

// scriptedAnswer asks the team's scripted upstream for reply, streamed or
// not, answering the real OpenCode request capture, and returns the bytes
// a client (and the proxy's tee) receives.
func scriptedAnswer(t testing.TB, reply scripted.Reply, stream bool) []byte {
	t.Helper()
	srv := httptest.NewServer(scripted.New(scripted.Script{Default: reply}))
	defer srv.Close()
	body := capture.Load(t, "first_agent_request").Body
	if !stream {
		body = bytes.Replace(body, []byte(`"stream":true`), []byte(`"stream":false`), 1)
	}
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var scriptedReply = scripted.Reply{
	Text: "I'll fix the parser — first a look at the file ✓",
	ToolCalls: []scripted.ToolCall{
		{ID: "call_a", Name: "read", Arguments: `{"filePath":"/work/ws1/pkg/parse.py"}`},
		{ID: "call_b", Name: "todowrite", Arguments: `{"todos":[{"content":"Fix the parser","status":"in_progress","priority":"high","id":"1"}]}`},
	},
}

func wantReply() transcript.Message {
	var calls []transcript.ToolCall
	for _, c := range scriptedReply.ToolCalls {
		calls = append(calls, transcript.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return transcript.NewMessage("assistant", scriptedReply.Text, calls)
}

func TestParseReplyScripted(t *testing.T) {
	for _, stream := range []bool{true, false} {
		b := scriptedAnswer(t, scriptedReply, stream)
		if stream && !bytes.HasPrefix(b, []byte("data: ")) {
			t.Fatalf("streamed answer does not look like SSE: %.80q", b)
		}
		got, ok := transcript.ParseReply(b, stream)
		if !ok || !reflect.DeepEqual(got, wantReply()) {
			t.Errorf("stream=%v: ParseReply = %+v, %v; want %+v", stream, got, ok, wantReply())
		}
		// The flag is a hint: a body of the other kind is read as what it is.
		if got, _ := transcript.ParseReply(b, !stream); !reflect.DeepEqual(got, wantReply()) {
			t.Errorf("stream=%v with the wrong flag: %+v", stream, got)
		}
	}
}

// TestParseReplyTruncated cuts a real stream at every byte: each prefix
// parses without panicking to a prefix of the full answer.
func TestParseReplyTruncated(t *testing.T) {
	full := scriptedAnswer(t, scriptedReply, true)
	want := wantReply()
	for n := range len(full) {
		got, _ := transcript.ParseReply(full[:n], true)
		if !strings.HasPrefix(want.Text(), got.Text()) {
			t.Fatalf("cut at %d: text %q is not a prefix", n, got.Text())
		}
		if len(got.ToolCalls) > len(want.ToolCalls) {
			t.Fatalf("cut at %d: %d tool calls", n, len(got.ToolCalls))
		}
		for i, c := range got.ToolCalls {
			w := want.ToolCalls[i]
			if c.ID != w.ID || c.Name != w.Name || !strings.HasPrefix(w.Arguments, c.Arguments) {
				t.Fatalf("cut at %d: call %d = %+v, want a prefix of %+v", n, i, c, w)
			}
		}
	}
	// A JSON answer cut short still gives what precedes the cut.
	j := scriptedAnswer(t, scripted.Reply{Text: "all done"}, false)
	if got, ok := transcript.ParseReply(j[:len(j)-20], false); !ok || got.Text() != "all done" {
		t.Errorf("cut JSON: %+v, %v", got, ok)
	}
}

func TestParseReplyShapes(t *testing.T) {
	for _, c := range []struct {
		name string
		body string
		sse  bool
		want transcript.Message
		ok   bool
	}{
		{"CRLF, comments, event lines, no space after data:", ": keep-alive\r\nevent: message\r\ndata:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n", true,
			transcript.NewMessage("assistant", "hi", nil), true},
		{"multi-line data event", "data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"x\"}}]}\n\n", true,
			transcript.NewMessage("assistant", "x", nil), true},
		{"choice 0 among others", "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"B\"}},{\"index\":0,\"delta\":{\"content\":\"A\"}}]}\n\n", true,
			transcript.NewMessage("assistant", "A", nil), true},
		{"tool call deltas without index", "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"c1\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"comm\"}}]}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"and\\\":\\\"ls\\\"}\"}}]}}]}\n\n", true,
			transcript.Message{Role: "assistant", ToolCalls: []transcript.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}}}, true},
		{"huge index ignored", "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1000000000,\"id\":\"x\",\"function\":{\"name\":\"bash\"}}]}}]}\n\n", true,
			transcript.Message{Role: "assistant"}, false},
		{"content parts", `{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}`, false,
			transcript.NewMessage("assistant", "a\nb", nil), true},
		{"error object", `{"error":{"message":"rate limited"}}`, false, transcript.Message{Role: "assistant"}, false},
		{"garbage", "\x00\xff{{{data: [", true, transcript.Message{Role: "assistant"}, false},
		{"empty", "", true, transcript.Message{Role: "assistant"}, false},
	} {
		got, ok := transcript.ParseReply([]byte(c.body), c.sse)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func FuzzParseReply(f *testing.F) {
	f.Add(scriptedAnswer(f, scriptedReply, true), true)
	f.Add(scriptedAnswer(f, scriptedReply, false), false)
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}\n\n"), true)
	f.Add([]byte(`{"choices":[{"message":{"tool_calls":[{"function":{"arguments":"{\"a`), false)
	f.Fuzz(func(t *testing.T, body []byte, sse bool) {
		m, ok := transcript.ParseReply(body, sse)
		if ok != (m.Text() != "" || len(m.ToolCalls) > 0) {
			t.Fatalf("ok %v for %+v", ok, m)
		}
		if len(m.ToolCalls) > transcript.MaxReplyCalls {
			t.Fatalf("%d tool calls", len(m.ToolCalls))
		}
	})
}

// TestFinal: each format's terminal event, named by its event field or,
// without one, by its data's type, even cut short; no other event ends an
// answer.
func TestFinal(t *testing.T) {
	for _, tc := range []struct {
		f          transcript.Format
		name, data string
		want       bool
	}{
		{transcript.OpenAIChat, "", "[DONE]", true},
		{transcript.OpenAIChat, "", ` [DONE] `, true},
		{transcript.OpenAIChat, "", `{"choices":[{"finish_reason":"stop"}]}`, false},
		{transcript.AnthropicMessages, "message_stop", `{"type":"message_stop"}`, true},
		{transcript.AnthropicMessages, "", `{"type":"message_stop"}`, true},
		{transcript.AnthropicMessages, "message_delta", `{"type":"message_delta"}`, false},
		{transcript.AnthropicMessages, "", "[DONE]", false},
		{transcript.OpenAIResponses, "response.completed", `{"type":"response.completed"`, true},
		{transcript.OpenAIResponses, "", `{"type":"response.completed","response":{"id":"r","output":[{"type":"mes`, true},
		{transcript.OpenAIResponses, "", `{"type":"response.failed"}`, true},
		{transcript.OpenAIResponses, "", `{"type":"response.incomplete"}`, true},
		{transcript.OpenAIResponses, "response.output_item.done", `{"type":"response.output_item.done"}`, false},
		{transcript.OpenAIResponses, "", `{"type":"error"}`, false},
	} {
		var name []byte
		if tc.name != "" {
			name = []byte(tc.name)
		}
		if got := tc.f.Final(name, []byte(tc.data)); got != tc.want {
			t.Errorf("%s Final(%q, %q) = %v, want %v", tc.f, tc.name, tc.data, got, tc.want)
		}
	}
}
