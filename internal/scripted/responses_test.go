package scripted

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
)

// TestResponsesStream: a queued reply of text and two tool calls comes back
// on /v1/responses as a Responses stream that the proxy's adapter reads as
// the same message (the text, both calls with their ids and arguments), each
// item added (empty), filled by its deltas, then done, response.completed
// last with every output item; the request is recorded.
func TestResponsesStream(t *testing.T) {
	s := New(Script{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	s.Enqueue("sid", Reply{Text: "two calls", ToolCalls: []ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}, {Name: "read", Arguments: `{"path":"a"}`}}})
	body := `{"model":"m","input":[{"role":"user","content":"go"}],"stream":true}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/responses", strings.NewReader(body))
	req.Header.Set("x-session-id", "sid")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := readEvents(t, resp.Body)
	var types []string
	var raw strings.Builder
	for _, e := range events {
		types = append(types, gjson.Get(e, "type").Str)
		raw.WriteString("data: " + e + "\n\n")
	}
	fc := "response.output_item.added response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done"
	want := "response.created response.output_item.added response.content_part.added response.output_text.delta response.output_text.done response.content_part.done response.output_item.done " +
		fc + " " + fc + " response.completed"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("events %s\nwant %s", got, want)
	}
	done := events[len(events)-1]
	if n := len(gjson.Get(done, "response.output").Array()); n != 3 || gjson.Get(done, "response.usage.input_tokens").Int() == 0 {
		t.Fatalf("response.completed: %d output items, usage %s", n, gjson.Get(done, "response.usage").Raw)
	}
	m, ok := transcript.OpenAIResponses.ParseReply([]byte(raw.String()), true)
	if !ok || m.Text() != "two calls" || len(m.ToolCalls) != 2 {
		t.Fatalf("adapter read %q with %d calls (ok %v)", m.Text(), len(m.ToolCalls), ok)
	}
	if c := m.ToolCalls[0]; c.ID != "c1" || c.Name != "bash" || c.Arguments != `{"command":"ls"}` {
		t.Errorf("first call %+v", c)
	}
	if c := m.ToolCalls[1]; c.ID == "" || c.Name != "read" || c.Arguments != `{"path":"a"}` {
		t.Errorf("second call %+v", c)
	}
	got := s.Requests()
	if len(got) != 1 || got[0].Path != "/v1/responses" || string(got[0].Body) != body || got[0].Rule != AnsweredByQueue {
		t.Fatalf("recorded %+v", got)
	}
}
