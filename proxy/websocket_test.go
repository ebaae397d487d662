package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// wsUpstream is a scripted Responses API in WebSocket mode: it records each
// frame and answers as the API does, one event per frame: a prewarm
// (generate false) with an empty response; a last user message saying
// "RUN:" with an exec custom tool call; anything else with a text message.
type wsUpstream struct {
	mu     sync.Mutex
	frames [][]byte
	n      int
	drop   bool // drop the TCP connection instead of answering
}

func (u *wsUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			return
		}
		u.mu.Lock()
		u.frames = append(u.frames, msg)
		u.n++
		id := fmt.Sprintf("resp_%d", u.n)
		drop := u.drop
		u.mu.Unlock()
		if drop {
			c.NetConn().Close()
			return
		}
		var output string
		var last gjson.Result
		if items := gjson.GetBytes(msg, "input").Array(); len(items) > 0 {
			last = items[len(items)-1]
		}
		switch {
		case gjson.GetBytes(msg, "generate").Type == gjson.False:
		case last.Get("role").Str == "user" && strings.Contains(last.Raw, "RUN:"):
			// The command runs in the checkout the request names, as
			// Codex's exec tool does: the agent works outside the
			// repository it was opened in.
			input := "text(1)"
			if ws := wsDir.FindString(last.Raw); ws != "" {
				input = `text(await tools.exec_command({cmd: \"git status\", workdir: \"` + ws + `\"}))`
			}
			output = fmt.Sprintf(`{"id":"ctc_%d","type":"custom_tool_call","status":"completed","call_id":"call_%d","name":"exec","input":"%s"}`, u.n, u.n, input)
		default:
			output = fmt.Sprintf(`{"id":"msg_%d","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"answer %d"}]}`, u.n, u.n)
		}
		c.WriteMessage(websocket.TextMessage, []byte(`{"type":"response.created","response":{"id":"`+id+`","output":[]}}`))
		if output != "" {
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"response.output_item.done","output_index":0,"item":`+output+`}`))
		}
		c.WriteMessage(websocket.TextMessage, []byte(`{"type":"response.completed","response":{"id":"`+id+`","output":[`+output+`],"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":1}}}`))
	}
}

// wsDir is a checkout a request names.
var wsDir = regexp.MustCompile(`/work/ws[0-9]+`)

func (u *wsUpstream) frame(t *testing.T, i int) []byte {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if i >= len(u.frames) {
		t.Fatalf("upstream saw %d frames, want %d", len(u.frames), i+1)
	}
	return u.frames[i]
}

// wsClient is Codex's side: it dials with the real handshake's headers and
// sends response.create frames, reading each response to its end.
type wsClient struct {
	t    *testing.T
	c    *websocket.Conn
	last string // id of the last completed response
}

func dialCodex(t *testing.T, url string) (*wsClient, *http.Response, error) {
	return dialCodexWith(t, url, http.Header{})
}

// dialCodexWith dials as dialCodex, with the headers of hdr added.
func dialCodexWith(t *testing.T, url string, hdr http.Header) (*wsClient, *http.Response, error) {
	hs := capture.Codex(t, "ws_handshake")
	for k, vs := range hs.Header {
		if !strings.HasPrefix(k, "Sec-Websocket") && k != "Upgrade" {
			hdr[k] = vs
		}
	}
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http")+"/v1/responses", hdr)
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { c.Close() })
	return &wsClient{t: t, c: c}, resp, nil
}

// send sends frame (with previous_response_id set to the last response
// when chain) and returns the events received up to response.completed.
func (w *wsClient) send(frame []byte, chain bool) []string {
	w.t.Helper()
	if chain {
		frame, _ = sjson.SetBytes(frame, "previous_response_id", w.last)
	}
	if err := w.c.WriteMessage(websocket.TextMessage, frame); err != nil {
		w.t.Fatal(err)
	}
	var evs []string
	for {
		w.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, msg, err := w.c.ReadMessage()
		if err != nil {
			w.t.Fatalf("read: %v", err)
		}
		evs = append(evs, string(msg))
		if gjson.GetBytes(msg, "type").Str == "response.completed" {
			w.last = gjson.GetBytes(msg, "response.id").Str
			return evs
		}
	}
}

// frameOf builds a response.create frame from the real first-turn frame
// with input items.
func frameOf(t *testing.T, items ...string) []byte {
	f := capture.Codex(t, "ws_frame_first_turn").Body
	f, _ = sjson.DeleteBytes(f, "previous_response_id")
	f, err := sjson.SetRawBytes(f, "input", []byte("["+strings.Join(items, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func userItem(text string) string {
	return codexItem(`{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]}`, text)
}

// TestWebSocketCodexSession drives Codex's WebSocket traffic (prewarm, a
// turn with a tool call whose output goes up alone, then two more tasks'
// turns sent as new items only) through router and rcm mode: every frame
// reaches the upstream self-contained (full input, no
// previous_response_id), the returning task's frame holds its own turns
// and none of the other task's, and the client gets every event as the
// upstream sent it.
func TestWebSocketCodexSession(t *testing.T) {
	for _, mode := range []string{"router", "rcm"} {
		t.Run(mode, func(t *testing.T) {
			u := &wsUpstream{}
			srv, h := setup(t, u, func(c *Config) { c.Mode = Mode(mode) })
			c, resp, err := dialCodex(t, srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Header.Get(HeaderMode) != mode {
				t.Fatalf("mode %q", resp.Header.Get(HeaderMode))
			}
			pre, _, _ := codexPreamble(t)
			c.send(capture.Codex(t, "ws_frame_prewarm").Body, false)
			if got := u.frame(t, 0); string(got) != string(capture.Codex(t, "ws_frame_prewarm").Body) {
				t.Fatal("prewarm changed")
			}
			req := switchRequests
			// Task 1: the full input, chained on the prewarm.
			evs := c.send(frameOf(t, append(pre, userItem(req[0]+" RUN: git status"))...), true)
			if len(evs) != 3 || !strings.Contains(evs[1], "custom_tool_call") {
				t.Fatalf("events %q", evs)
			}
			// The tool's output alone, chained.
			out := `{"type":"custom_tool_call_output","call_id":"call_2","output":[{"type":"input_text","text":"On branch main, work of task 1"}]}`
			c.send(frameOf(t, out), true)
			// Task 2 and back to task 1, new items only.
			c.send(frameOf(t, userItem(req[1])), true)
			c.send(frameOf(t, userItem(req[2])), true)
			for i := 1; i <= 4; i++ {
				f := u.frame(t, i)
				if gjson.GetBytes(f, "previous_response_id").Exists() {
					t.Fatalf("frame %d went up chained", i)
				}
				if gjson.GetBytes(f, "client_metadata").Raw != gjson.GetBytes(frameOf(t), "client_metadata").Raw {
					t.Fatalf("frame %d: client_metadata changed", i)
				}
			}
			if n := len(gjson.GetBytes(u.frame(t, 2), "input").Array()); n != len(pre)+3 {
				t.Fatalf("tool output frame went up with %d items, want the history's %d", n, len(pre)+3)
			}
			us3 := inputTexts(u.frame(t, 3), "user")
			if mode == "rcm" {
				if len(us3) != 2 || !briefs(us3[0], req[0]) {
					t.Fatalf("rcm: task 2 frame: user items %q", us3)
				}
				us3 = us3[1:]
			}
			if len(us3) != 1 || us3[0] != req[1] {
				t.Fatalf("task 2 frame: requests %q", us3)
			}
			last := string(u.frame(t, 4))
			us := inputTexts(u.frame(t, 4), "user")
			if mode == "rcm" {
				if len(us) != 3 || !strings.HasPrefix(us[1], "<rcm-task-state") {
					t.Fatalf("rcm: user items %q", us)
				}
				us = []string{us[0], us[2]}
			}
			if strings.Join(us, "|") != req[0]+" RUN: git status|"+req[2] ||
				!strings.Contains(last, "work of task 1") || !strings.Contains(last, `"call_id":"call_2","name":"exec"`) || strings.Contains(chattest.OutsideRecords(last), "answer 4") {
				t.Fatalf("returning task's frame: requests %q", us)
			}
			c.c.Close()
			h.after.Wait()
			evsStored, err := h.store.Events(gjson.GetBytes(frameOf(t), "prompt_cache_key").Str, 0)
			if err != nil || len(evsStored) != 5 || evsStored[0].Kind != "prewarm" || evsStored[4].Task != evsStored[1].Task || evsStored[3].Task == evsStored[1].Task {
				t.Fatalf("stored events %+v (%v)", evsStored, err)
			}
		})
	}
}

// TestWebSocketRefusedUpgrade: an upgrade the upstream refuses (426, as a
// provider without WebSocket mode answers) is refused to the client the
// same way, so that Codex falls back to HTTP.
func TestWebSocketRefusedUpgrade(t *testing.T) {
	rec := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUpgradeRequired)
		fmt.Fprint(w, `{"error":{"message":"websocket not supported"}}`)
	})
	srv, _ := setup(t, rec, func(c *Config) { c.Mode = RCM })
	_, resp, err := dialCodex(t, srv.URL)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("err %v resp %+v", err, resp)
	}
	body, _ := io.ReadAll(resp.Body)
	if msg := gjson.GetBytes(body, "error.message").Str; msg != "websocket not supported" {
		t.Errorf("body %s", body)
	}
}

// TestWebSocketUpstreamDropped: an upstream whose connection drops closes
// the client's with 1011 and a reason that says so.
func TestWebSocketUpstreamDropped(t *testing.T) {
	u := &wsUpstream{drop: true}
	srv, _ := setup(t, u, func(c *Config) { c.Mode = Router })
	c, _, err := dialCodex(t, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c.c.WriteMessage(websocket.TextMessage, frameOf(t, userItem("hi")))
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _, err = c.c.ReadMessage()
	ce, ok := err.(*websocket.CloseError)
	if !ok || ce.Code != websocket.CloseInternalServerErr || !strings.Contains(ce.Text, "upstream connection lost") {
		t.Fatalf("client read: %v", err)
	}
}

// TestWebSocketOriginRefused: a browser page (it sends Origin) cannot use
// rcm as a WebSocket relay.
func TestWebSocketOriginRefused(t *testing.T) {
	srv, _ := setup(t, &wsUpstream{}, func(c *Config) { c.Mode = RCM })
	_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/responses", http.Header{"Origin": {"https://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("err %v resp %v", err, resp)
	}
}

// TestWebSocketPingAndLimit: rcm answers the client's pings itself, and a
// frame over --max-body closes the client's connection with 1009.
func TestWebSocketPingAndLimit(t *testing.T) {
	srv, _ := setup(t, &wsUpstream{}, func(c *Config) { c.Mode = RCM; c.MaxBody = 64 << 10 })
	c, _, err := dialCodex(t, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	pong := make(chan string, 1)
	c.c.SetPongHandler(func(s string) error { pong <- s; return nil })
	if err := c.c.WriteControl(websocket.PingMessage, []byte("p1"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	// Pongs are read by the reader: send a frame and read its answer.
	c.send(frameOf(t, userItem("hi")), false)
	select {
	case s := <-pong:
		if s != "p1" {
			t.Fatalf("pong %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no pong")
	}
	c.c.WriteMessage(websocket.TextMessage, frameOf(t, userItem(strings.Repeat("x", 100<<10))))
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _, err = c.c.ReadMessage()
	if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("oversized frame: %v", err)
	}
}

// TestUpstreamBaseQuery: an --upstream whose base URL carries a query
// (Azure's api-version) gets it on every call, HTTP and WebSocket alike,
// with the client's query after it and the path below the base's.
func TestUpstreamBaseQuery(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	ws := &wsUpstream{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		if websocket.IsWebSocketUpgrade(r) {
			ws.ServeHTTP(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"resp_1","object":"response","output":[]}`)
	}))
	t.Cleanup(up.Close)
	_, srv, _ := newHandler(t, Config{Upstream: up.URL + "/v1?api-version=1", Mode: RCM})
	resp := post(t, srv.URL+"/v1/responses?x=2", []byte(`{"model":"m","input":[{"role":"user","content":"hi"}]}`), http.Header{HeaderSession: {"ses_q"}})
	io.Copy(io.Discard, resp.Body)
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/responses?x=2", http.Header{HeaderSession: {"ses_q"}})
	if err != nil {
		t.Fatalf("websocket through rcm: %v (upstream saw %q)", err, seen)
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	if want := "/v1/responses?api-version=1&x=2"; len(seen) != 2 || seen[0] != want || seen[1] != want {
		t.Fatalf("upstream saw %q, want %q twice", seen, want)
	}
}
