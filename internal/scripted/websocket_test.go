package scripted

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/tidwall/gjson"
)

// dial opens a Responses WebSocket on the server.
func dial(t *testing.T, url string, h http.Header) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http")+"/v1/responses", h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// answer sends a frame and reads the events that answer it, up to the
// terminal one (or an error).
func answer(t *testing.T, c *websocket.Conn, frame string) []string {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var evs []string
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("after %d events: %v", len(evs), err)
		}
		evs = append(evs, string(msg))
		switch gjson.GetBytes(msg, "type").Str {
		case "response.completed", "error":
			return evs
		}
	}
}

// TestWebSocket: over the Responses WebSocket each frame is a call answered
// with a stream's events, one frame each. A frame continuing the last
// response is read with the connection's history (the tool output after
// the request that asked for it: "Done"), and recorded as sent with its
// full form beside it; a warm-up (generate false) gets no output; an error
// reply is an error event after which the connection serves on.
func TestWebSocket(t *testing.T) {
	s := New(Marked())
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := dial(t, srv.URL, http.Header{"X-Session-Id": {"ws1"}})

	warm := answer(t, c, `{"type":"response.create","model":"m","generate":false,"input":[]}`)
	if len(warm) != 2 || gjson.Get(warm[1], "response.output.#").Int() != 0 {
		t.Fatalf("warm-up answered %v", warm)
	}
	first := `{"type":"response.create","model":"m","tools":[{"type":"function","name":"exec_command"}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"RUN: ls"}]}]}`
	evs := answer(t, c, first)
	done := evs[len(evs)-1]
	call := gjson.Get(done, "response.output.0")
	if call.Get("name").Str != "exec_command" || call.Get("arguments").Str != `{"cmd":"ls"}` {
		t.Fatalf("first frame answered %s", done)
	}
	next := `{"type":"response.create","model":"m","previous_response_id":"` + gjson.Get(done, "response.id").Str +
		`","input":[{"type":"function_call_output","call_id":"` + call.Get("call_id").Str + `","output":"a.txt"}]}`
	evs = answer(t, c, next)
	if got := gjson.Get(evs[len(evs)-1], "response.output.0.content.0.text").Str; got != "Done: a.txt" {
		t.Fatalf("chained frame answered %q", got)
	}
	// A frame naming another response is read as it is.
	unknown := `{"type":"response.create","previous_response_id":"resp_gone","input":[]}`
	if evs = answer(t, c, unknown); gjson.Get(evs[len(evs)-1], "type").Str != "response.completed" {
		t.Fatalf("frame on an unknown response answered %v", evs)
	}

	got := s.Requests()
	if len(got) != 4 {
		t.Fatalf("%d frames recorded, want 4", len(got))
	}
	for _, r := range got {
		if !r.Frame || r.Session != "ws1" || r.Path != "/v1/responses" {
			t.Errorf("frame recorded as %+v", r)
		}
	}
	if got[0].Rule != AnsweredEmpty || got[0].Kind != "prewarm" {
		t.Errorf("warm-up recorded with rule %d kind %q", got[0].Rule, got[0].Kind)
	}
	if string(got[2].Body) != next || !strings.Contains(string(got[2].Full), "RUN: ls") || gjson.GetBytes(got[2].Full, "previous_response_id").Exists() {
		t.Errorf("chained frame recorded as %s, read as %s", got[2].Body, got[2].Full)
	}
	if string(got[3].Full) != unknown {
		t.Errorf("frame on an unknown response read as %s", got[3].Full)
	}

	s.Enqueue("ws1", Reply{Status: 429, ErrorBody: `{"error":{"type":"rate_limit","message":"slow down"}}`})
	evs = answer(t, c, first)
	if len(evs) != 1 || gjson.Get(evs[0], "status").Int() != 429 || gjson.Get(evs[0], "error.message").Str != "slow down" {
		t.Fatalf("error reply answered %v", evs)
	}
	if evs = answer(t, c, first); gjson.Get(evs[len(evs)-1], "response.output.0.name").Str != "exec_command" {
		t.Fatalf("after an error the connection answered %v", evs)
	}
	if evs = answer(t, c, `{"type":`); gjson.Get(evs[0], "status").Int() != http.StatusBadRequest {
		t.Fatalf("a frame that is not JSON answered %v", evs)
	}
}

// TestWebSocketClientGone: a client that leaves while its answer hangs
// ends the handler.
func TestWebSocketClientGone(t *testing.T) {
	s := New(Script{Default: Reply{Hang: true}})
	url, returned := watch(t, s)
	c := dial(t, url, nil)
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"response.create","input":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := c.ReadMessage(); err != nil || gjson.GetBytes(msg, "type").Str != "response.created" {
		t.Fatalf("first event %s, %v", msg, err)
	}
	c.Close()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("handler still running 10 s after the client went away")
	}
}
