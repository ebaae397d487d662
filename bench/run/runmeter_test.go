package run

import (
	"bufio"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestMeter counts calls per session from the proxy's headers and the
// upstream's usage, streamed (split across writes) or not, cached tokens
// included, and passes the answer through unchanged.
func TestMeter(t *testing.T) {
	stream := "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":60}}}\n\ndata: [DONE]\n\n"
	proxy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RCM-Tokens-In", "120")
		w.Header().Set("X-RCM-Tokens-Out", "80")
		if r.URL.Query().Get("json") != "" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < len(stream); i += 17 {
			io.WriteString(w, stream[i:min(i+17, len(stream))])
			w.(http.Flusher).Flush()
		}
	})
	m := NewMeter(proxy)
	srv := httptest.NewServer(m)
	defer srv.Close()
	call := func(q string) string {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/rcm/v1/chat/completions"+q, strings.NewReader("{}"))
		req.Header.Set("X-Session-Id", "ses_1")
		req.Header.Set("X-RCM-Threshold", "0.7")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := call(""); got != stream {
		t.Fatalf("answer changed: %q", got)
	}
	call("?json=1")
	want := Usage{Calls: 2, SentTokens: 240, ForwardedTokens: 160, UsageCalls: 2, PromptTokens: 105, CachedTokens: 60, CompletionTokens: 9}
	if got := m.Usage("ses_1"); got != want {
		t.Errorf("usage %+v, want %+v", got, want)
	}
	if m.Threshold("ses_1") != "0.7" || m.Usage("other") != (Usage{}) {
		t.Errorf("threshold %q, other %+v", m.Threshold("ses_1"), m.Usage("other"))
	}
}

// TestMeterAPIs: each API's usage, streamed and in a JSON answer, counts as
// prompt, cached and completion tokens, keyed by the client's session
// header. Anthropic puts the input in message_start and the output in
// message_delta, with the cached prompt outside input_tokens; the
// Responses API puts it in response.completed (or the response object),
// with cached tokens inside input_tokens.
func TestMeterAPIs(t *testing.T) {
	for _, c := range []struct {
		name, path, header, session string
		queries                     []string
		stream, json                string
		want                        Usage
	}{
		{"messages", "/rcm/v1/messages", "X-Claude-Code-Session-Id", "cc_1", []string{"?beta=true", "?json=1"},
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":5,\"cache_read_input_tokens\":85,\"output_tokens\":1}}}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":12}}\n\n",
			`{"type":"message","content":[],"usage":{"input_tokens":3,"cache_read_input_tokens":0,"output_tokens":2}}`,
			Usage{Calls: 2, UsageCalls: 2, PromptTokens: 103, CachedTokens: 85, CompletionTokens: 14}},
		{"responses", "/rcm/v1/responses", "Session-Id", "thr_1", []string{"", "?json=1"},
			"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"output\":[]}}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"output\":[],\"usage\":{\"input_tokens\":100,\"input_tokens_details\":{\"cached_tokens\":80},\"output_tokens\":7}}}\n\n",
			`{"id":"r","object":"response","output":[],"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":0},"output_tokens":2}}`,
			Usage{Calls: 2, UsageCalls: 2, PromptTokens: 105, CachedTokens: 80, CompletionTokens: 9}},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("json") != "" {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, c.json)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, c.stream)
			})
			srv := httptest.NewServer(NewMeter(proxy))
			defer srv.Close()
			m := srv.Config.Handler.(*Meter)
			for _, q := range c.queries {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+c.path+q, strings.NewReader("{}"))
				req.Header.Set(c.header, c.session)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if got := m.Usage(c.session); got != c.want {
				t.Errorf("usage %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestUpstreamUsage(t *testing.T) {
	for _, c := range []struct {
		name, usage                string
		prompt, cached, completion int
	}{
		{"chat completions", `{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":60}}`, 100, 60, 7},
		{"chat completions, no cache", `{"prompt_tokens":5,"completion_tokens":2}`, 5, 0, 2},
		{"responses", `{"input_tokens":300,"input_tokens_details":{"cached_tokens":256},"output_tokens":9}`, 300, 256, 9},
		{"anthropic", `{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":97,"output_tokens":5}`, 100, 97, 5},
	} {
		var u upstreamUsage
		u.add(gjson.Parse(c.usage))
		if !u.seen || u.prompt != c.prompt || u.cached != c.cached || u.completion != c.completion {
			t.Errorf("%s: %+v, want %d %d %d", c.name, u, c.prompt, c.cached, c.completion)
		}
	}
}

// TestMeterUsageWaits: a client may end its turn once it has read an
// answer's last event, before the proxy's handler has returned; Usage
// waits for that call and counts it.
func TestMeterUsageWaits(t *testing.T) {
	release := make(chan struct{})
	proxy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		<-release // the proxy's work after the answer
	})
	m := NewMeter(proxy)
	srv := httptest.NewServer(m)
	defer srv.Close()
	done := sync.OnceFunc(func() { close(release) })
	defer done() // before srv.Close, which waits for the handler
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/rcm/v1/responses", strings.NewReader("{}"))
	req.Header.Set("Session-Id", "th_1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.Contains(line, "response.completed") {
		t.Fatalf("read %q: %v", line, err)
	}
	got := make(chan Usage)
	go func() { got <- m.Usage("th_1") }()
	select {
	case u := <-got:
		t.Fatalf("Usage returned %+v while the call was under way", u)
	case <-time.After(200 * time.Millisecond):
	}
	done()
	if u := <-got; u.Calls != 1 || u.PromptTokens != 9 {
		t.Errorf("usage %+v, want the call counted", u)
	}
}

// TestMeterAborted: a call the proxy aborts (http.ErrAbortHandler) after
// the answer's usage is counted, and Usage does not wait for it forever.
func TestMeterAborted(t *testing.T) {
	proxy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	m := NewMeter(proxy)
	srv := httptest.NewServer(m)
	defer srv.Close()
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/rcm/v1/responses", strings.NewReader("{}"))
	req.Header.Set("Session-Id", "th_1")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if u := m.Usage("th_1"); u.Calls != 1 || u.PromptTokens != 9 {
		t.Errorf("usage %+v, want the aborted call counted", u)
	}
}
