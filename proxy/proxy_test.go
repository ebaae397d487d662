package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/memory"
	"github.com/tidwall/gjson"
)

// load reads a real OpenCode request: body bytes, headers and path.
func load(tb testing.TB, name string) ([]byte, http.Header, string) {
	r := capture.Load(tb, name)
	return r.Body, r.Header, r.Path
}

// recorder is a fake upstream that records what it receives and answers
// with answer (a plain JSON completion when nil).
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
	reqs   []*http.Request
	answer http.HandlerFunc
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.bodies = append(rec.bodies, b)
	rec.reqs = append(rec.reqs, r.Clone(context.Background()))
	rec.mu.Unlock()
	if rec.answer != nil {
		rec.answer(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
}

func (rec *recorder) last(t *testing.T) ([]byte, *http.Request) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 {
		t.Fatal("upstream saw no request")
	}
	return rec.bodies[len(rec.bodies)-1], rec.reqs[len(rec.reqs)-1]
}

// newHandler validates cfg (with a fresh store) and serves rcm with it.
func newHandler(tb testing.TB, cfg Config) (*Handler, *httptest.Server, Config) {
	tb.Helper()
	if cfg.DB == "" {
		cfg.DB = filepath.Join(tb.TempDir(), "rcm.db")
	}
	cfg.Defaults()
	h, err := New(cfg, nil)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(func() { srv.Close(); h.Close() })
	return h, srv, cfg
}

// setup starts a fake upstream and rcm in front of it.
func setup(t *testing.T, rec http.Handler, mut func(*Config)) (*httptest.Server, *Handler) {
	t.Helper()
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	cfg := Config{Upstream: up.URL + "/v1", AnthropicUpstream: up.URL}
	if mut != nil {
		mut(&cfg)
	}
	h, srv, _ := newHandler(t, cfg)
	return srv, h
}

func post(t *testing.T, url string, body []byte, h http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestNativeForwardsCapturesByteIdentical(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, func(c *Config) { c.Mode = Native })
	for _, name := range capture.Names(t) {
		body, h, path := load(t, name)
		h.Set("X-RCM-Mode", "native")
		resp := post(t, srv.URL+path, body, h)
		io.Copy(io.Discard, resp.Body)
		got, req := rec.last(t)
		if !bytes.Equal(got, body) {
			t.Errorf("%s: upstream body differs from the client's", name)
		}
		if req.URL.Path != path {
			t.Errorf("%s: upstream path %s, want %s", name, req.URL.Path, path)
		}
		for _, k := range []string{"Authorization", "X-Session-Id", "User-Agent"} {
			if req.Header.Get(k) != h.Get(k) {
				t.Errorf("%s: header %s not forwarded", name, k)
			}
		}
		if req.Header.Get("X-RCM-Mode") != "" {
			t.Errorf("%s: rcm's own header leaked upstream", name)
		}
		if resp.Header.Get(HeaderMode) != "native" || resp.Header.Get(HeaderFallback) != FallbackNone {
			t.Errorf("%s: mode/fallback headers %v", name, resp.Header)
		}
		if want := h.Get("X-Session-Id"); resp.Header.Get(HeaderSession) != want {
			t.Errorf("%s: session %q, want %q", name, resp.Header.Get(HeaderSession), want)
		}
		if resp.Header.Get(HeaderTokensIn) == "" || resp.Header.Get(HeaderTokensIn) != resp.Header.Get(HeaderTokensOut) {
			t.Errorf("%s: token headers in=%q out=%q", name, resp.Header.Get(HeaderTokensIn), resp.Header.Get(HeaderTokensOut))
		}
	}
}

func TestModeSelection(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, nil)
	body, h, _ := load(t, "continue_request")
	cases := []struct {
		path, header, want string
		status             int
	}{
		{"/v1/chat/completions", "", "rcm", 200},
		{"/v1/chat/completions", "native", "native", 200},
		{"/v1/chat/completions", "Router", "router", 200},
		{"/native/v1/chat/completions", "rcm", "native", 200},
		{"/router/v1/chat/completions", "", "router", 200},
		{"/rcm/v1/chat/completions", "native", "rcm", 200},
		{"/v1/chat/completions", "bogus", "", 400},
		{"/nope/v1/chat/completions", "", "", 404},
	}
	for _, c := range cases {
		hh := h.Clone()
		if c.header != "" {
			hh.Set(HeaderMode, c.header)
		}
		resp := post(t, srv.URL+c.path, body, hh)
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != c.status || c.status == 200 && resp.Header.Get(HeaderMode) != c.want {
			t.Errorf("%s with %q: status %d mode %q, want %d %q", c.path, c.header, resp.StatusCode, resp.Header.Get(HeaderMode), c.status, c.want)
		}
		if c.status == 200 {
			if _, req := rec.last(t); req.URL.Path != "/v1/chat/completions" {
				t.Errorf("%s: upstream path %s", c.path, req.URL.Path)
			}
		}
	}
}

func TestFailOpenOnBadBodies(t *testing.T) {
	rec := &recorder{answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"bad body"}}`)
	}}
	srv, _ := setup(t, rec, nil)
	for _, body := range []string{`not json`, `[1,2]`, `{"model":"m"}`, `{"messages":[{"content":1}]}`, ``} {
		resp := post(t, srv.URL+"/v1/chat/completions", []byte(body), nil)
		got, _ := io.ReadAll(resp.Body)
		up, _ := rec.last(t)
		if string(up) != body {
			t.Errorf("%q: upstream got %q", body, up)
		}
		if resp.StatusCode != 400 || string(got) != `{"error":{"message":"bad body"}}` {
			t.Errorf("%q: client got %d %s, want the upstream's answer", body, resp.StatusCode, got)
		}
		if resp.Header.Get(HeaderFallback) != FallbackError {
			t.Errorf("%q: fallback %q", body, resp.Header.Get(HeaderFallback))
		}
	}
}

func TestSideCallsPassThrough(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, nil)
	for _, name := range []string{"title_request", "compaction_manual_request"} {
		body, h, path := load(t, name)
		resp := post(t, srv.URL+path, body, h)
		io.Copy(io.Discard, resp.Body)
		if got, _ := rec.last(t); !bytes.Equal(got, body) {
			t.Errorf("%s: side call modified", name)
		}
		if resp.Header.Get(HeaderFallback) != FallbackSideCall {
			t.Errorf("%s: fallback %q", name, resp.Header.Get(HeaderFallback))
		}
	}
}

func TestBodyTooLarge(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, func(c *Config) { c.MaxBody = 1000 })
	body, h, path := load(t, "title_request")
	resp := post(t, srv.URL+path, body, h)
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(got), "--max-body") {
		t.Fatalf("status %d body %s", resp.StatusCode, got)
	}
	if gjson.GetBytes(got, "error.code").String() != "body_too_large" {
		t.Fatalf("not an OpenAI-shaped error: %s", got)
	}
	if len(rec.reqs) != 0 {
		t.Fatal("oversized body was forwarded")
	}
}

func TestUpstreamErrorsPassIntact(t *testing.T) {
	rec := &recorder{answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "7")
		w.Header().Set("X-Ratelimit-Remaining-Requests", "0")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
	}}
	srv, _ := setup(t, rec, nil)
	body, h, path := load(t, "continue_request")
	resp := post(t, srv.URL+path, body, h)
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || resp.Header.Get("X-Ratelimit-Remaining-Requests") != "0" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
	}
	if string(got) != `{"error":{"message":"slow down","type":"rate_limit"}}` {
		t.Fatalf("body %s", got)
	}
}

func TestUnreachableUpstreamIs502(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, srv, _ := newHandler(t, Config{Upstream: "http://" + addr + "/v1"})
	defer srv.Close()
	body, h, path := load(t, "continue_request")
	resp := post(t, srv.URL+path, body, h)
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadGateway || gjson.GetBytes(got, "error.code").String() != "upstream_unreachable" {
		t.Fatalf("status %d body %s", resp.StatusCode, got)
	}
}

func TestSlowUpstreamIs504(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	rec := &recorder{answer: func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}}
	srv, _ := setup(t, rec, func(c *Config) { c.HeaderTimeout = 50 * time.Millisecond })
	body, h, path := load(t, "continue_request")
	resp := post(t, srv.URL+path, body, h)
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusGatewayTimeout || gjson.GetBytes(got, "error.code").String() != "upstream_timeout" {
		t.Fatalf("status %d body %s", resp.StatusCode, got)
	}
}

// TestStreamFlushesEachEvent checks that the client reads an SSE event
// while the upstream is still holding the next one back.
func TestStreamFlushesEachEvent(t *testing.T) {
	next := make(chan struct{})
	rec := &recorder{answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: {\"n\":2}\n\ndata: [DONE]\n\n")
	}}
	srv, _ := setup(t, rec, nil)
	body, h, path := load(t, "continue_request")
	resp := post(t, srv.URL+path, body, h)
	if resp.Header.Get("X-Accel-Buffering") != "no" || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("headers %v", resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "data: {\"n\":1}\n" {
		t.Fatalf("first event %q %v", line, err)
	}
	close(next)
	rest, _ := io.ReadAll(br)
	if string(rest) != "\ndata: {\"n\":2}\n\ndata: [DONE]\n\n" {
		t.Fatalf("rest %q", rest)
	}
}

// TestClientDisconnectCancelsUpstream: a client that goes away mid-stream
// cancels the upstream request at once.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	cancelled := make(chan struct{})
	rec := &recorder{answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(cancelled)
	}}
	srv, _ := setup(t, rec, nil)
	body, h, path := load(t, "continue_request")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, bytes.NewReader(body))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	bufio.NewReader(resp.Body).ReadString('\n')
	cancel()
	resp.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("upstream request still running after the client left")
	}
}

func TestCredentials(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, func(c *Config) { c.UpstreamKey = "sk-rcm" })
	cases := []struct {
		path   string
		client http.Header
		header string
		want   string
	}{
		{"/v1/chat/completions", http.Header{"Authorization": {"Bearer client"}}, "Authorization", "Bearer client"},
		{"/v1/chat/completions", http.Header{}, "Authorization", "Bearer sk-rcm"},
		{"/v1/messages", http.Header{}, "X-Api-Key", "sk-rcm"},
		{"/v1/messages", http.Header{"X-Api-Key": {"client"}}, "X-Api-Key", "client"},
		{"/v1/messages", http.Header{"X-Api-Key": {"client"}}, "Authorization", ""},
	}
	for _, c := range cases {
		resp := post(t, srv.URL+c.path, []byte(`{"messages":[]}`), c.client)
		io.Copy(io.Discard, resp.Body)
		if _, req := rec.last(t); req.Header.Get(c.header) != c.want {
			t.Errorf("%s %v: upstream %s=%q, want %q", c.path, c.client, c.header, req.Header.Get(c.header), c.want)
		}
	}
}

func TestOtherRoutesPassThrough(t *testing.T) {
	rec := &recorder{answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"m1"}],"q":"`+r.URL.RawQuery+`"}`)
	}}
	srv, _ := setup(t, rec, nil)
	resp, err := http.Get(srv.URL + "/v1/models?limit=5")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || gjson.GetBytes(got, "data.0.id").String() != "m1" || gjson.GetBytes(got, "q").String() != "limit=5" {
		t.Fatalf("status %d body %s", resp.StatusCode, got)
	}
	_, req := rec.last(t)
	if req.Method != "GET" || req.URL.Path != "/v1/models" {
		t.Fatalf("upstream saw %s %s", req.Method, req.URL.Path)
	}
	emb := []byte(`{"input":"x","model":"e"}`)
	resp = post(t, srv.URL+"/rcm/v1/embeddings", emb, nil)
	io.Copy(io.Discard, resp.Body)
	if got, req := rec.last(t); !bytes.Equal(got, emb) || req.URL.Path != "/v1/embeddings" {
		t.Fatalf("embeddings: %s %s", req.URL.Path, got)
	}
}

func TestHealthz(t *testing.T) {
	srv, _ := setup(t, &recorder{}, nil)
	resp, err := http.Get(srv.URL + "/rcm/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
}

func TestSessionIdentity(t *testing.T) {
	a, ha, _ := load(t, "tool_result_request")
	b, _, _ := load(t, "continue_request")
	ha.Del("X-Session-Id")
	ha.Del("X-Session-Affinity")
	rec := &recorder{}
	srv, _ := setup(t, rec, nil)
	ids := map[string]bool{}
	for _, body := range [][]byte{a, b} {
		resp := post(t, srv.URL+"/v1/chat/completions", body, ha)
		io.Copy(io.Discard, resp.Body)
		ids[resp.Header.Get(HeaderSession)] = true
	}
	if len(ids) != 1 || ids[""] {
		t.Fatalf("derived session ids %v: want one, stable as the session grows", ids)
	}
	hh := ha.Clone()
	hh.Set("X-Session-Affinity", "ses_aff")
	resp := post(t, srv.URL+"/v1/chat/completions", a, hh)
	if resp.Header.Get(HeaderSession) != "ses_aff" {
		t.Fatalf("affinity ignored: %q", resp.Header.Get(HeaderSession))
	}
	hh.Set("X-RCM-Session", "mine")
	resp = post(t, srv.URL+"/v1/chat/completions", a, hh)
	if resp.Header.Get(HeaderSession) != "mine" {
		t.Fatalf("override ignored: %q", resp.Header.Get(HeaderSession))
	}
}

func TestConfigValidate(t *testing.T) {
	var c Config
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c != (Config{}) {
		t.Fatalf("Validate changed the config: %+v", c)
	}
	c.Defaults()
	if c.Listen != DefaultListen || c.Upstream != DefaultUpstream || c.Mode != RCM || c.Threshold != 0.8 || c.MaxBody != 32<<20 {
		t.Fatalf("defaults %+v", c)
	}
	bad := []Config{
		{Listen: "nope"},
		{Upstream: "ftp://x"},
		{Upstream: "::"},
		{Mode: "fast"},
		{Threshold: 1.5},
		{Threshold: math.NaN()},
		{MaxBody: -1},
		{RouterBaseURL: "ftp://x", RouterModel: "m"},
		{RouterBaseURL: "http://127.0.0.1:1/v1"}, // no model
		{MemoryBaseURL: "http://127.0.0.1:1/v1"}, // no model
		{MemoryAPIKey: "sk-x"},
		{MemoryModel: "m", MemoryBaseURL: "localhost"},
	}
	for _, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestClassify(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		ctx  context.Context
		err  error
		want int
	}{
		{context.Background(), errors.New("connection refused"), 502},
		{context.Background(), context.DeadlineExceeded, 504},
		{cancelled, context.Canceled, statusClientClosed},
	}
	for _, c := range cases {
		if got := classify(c.ctx, c.err).Status; got != c.want {
			t.Errorf("%v: %d, want %d", c.err, got, c.want)
		}
	}
}

// TestStoreRecordsSessions: after the response, the session and the
// decision land in the store (off the request path; Close waits for them).
func TestStoreRecordsSessions(t *testing.T) {
	up := httptest.NewServer(&recorder{})
	defer up.Close()
	db := filepath.Join(t.TempDir(), "rcm.db")
	cfg := Config{Upstream: up.URL + "/v1", DB: db}
	cfg.Validate()
	h, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	body, hdr, path := load(t, "subagent_request_with_parent_header")
	for i := 0; i < 2; i++ {
		resp := post(t, srv.URL+path, body, hdr)
		io.Copy(io.Discard, resp.Body)
	}
	srv.Close()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := memory.Open(db, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, ok, err := st.Session(hdr.Get("X-Session-Id"))
	if err != nil || !ok || s.Calls != 2 || s.Parent != hdr.Get("X-Parent-Session-Id") {
		t.Fatalf("session %+v ok=%v err=%v", s, ok, err)
	}
	evs, err := st.Events(s.ID, 0)
	if err != nil || len(evs) != 2 || evs[0].Kind != "subagent" || evs[0].Mode != "rcm" {
		t.Fatalf("events %+v err=%v", evs, err)
	}
}

// TestSubagentTakesParentTask: a subagent's call (x-parent-session-id)
// belongs to its parent session's current task and is forwarded whole,
// whichever provider OpenCode sends it through (chat completions, and
// Messages through its Anthropic provider).
func TestSubagentTakesParentTask(t *testing.T) {
	sub, subHdr, subPath := load(t, "subagent_request_with_parent_header")
	msgs, msgsHdr, msgsPath := load(t, "anthropic_messages_request")
	msgsHdr = msgsHdr.Clone()
	msgsHdr.Set("X-Session-Id", "ses_child")
	msgsHdr.Set("X-Session-Affinity", "ses_child")
	msgsHdr.Set("X-Parent-Session-Id", subHdr.Get("X-Parent-Session-Id"))
	for _, c := range []struct {
		name string
		body []byte
		hdr  http.Header
		path string
	}{
		{"chat", sub, subHdr, subPath},
		{"messages", msgs, msgsHdr, msgsPath},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{}
			up := httptest.NewServer(rec)
			defer up.Close()
			db := filepath.Join(t.TempDir(), "rcm.db")
			st, err := memory.Open(db, memory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ev := memory.Event{Kind: "agent", Mode: "router", Task: "t2", Confidence: 0.9}
			if err := st.Update(func(w *memory.Tx) error { return w.AppendEvent(c.hdr.Get("X-Parent-Session-Id"), &ev) }); err != nil {
				t.Fatal(err)
			}
			st.Close()
			cfg := Config{Upstream: up.URL + "/v1", AnthropicUpstream: up.URL, DB: db, Mode: Router}
			cfg.Validate()
			h, err := New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer func() { srv.Close(); h.Close() }()
			resp := post(t, srv.URL+c.path, c.body, c.hdr)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got := resp.Header.Get(HeaderTask); got != "t2" || resp.Header.Get(HeaderFallback) != FallbackNone {
				t.Fatalf("task %q fallback %q, want t2 none", got, resp.Header.Get(HeaderFallback))
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.bodies) != 1 || !bytes.Equal(rec.bodies[0], c.body) {
				t.Fatalf("the subagent's body was not forwarded as sent")
			}
		})
	}
}

// TestDisconnectLeaksNothing: repeated mid-stream disconnects leave no
// goroutine behind (the upstream reads and the copy loops all end).
func TestDisconnectLeaksNothing(t *testing.T) {
	rec := &recorder{answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}}
	srv, h := setup(t, rec, nil)
	body, hdr, path := load(t, "continue_request")
	client := &http.Client{Transport: &http.Transport{}}
	run := func() {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, bytes.NewReader(body))
		req.Header = hdr.Clone()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		bufio.NewReader(resp.Body).ReadString('\n')
		cancel()
		resp.Body.Close()
	}
	settle := func() int {
		client.CloseIdleConnections()
		h.transport.CloseIdleConnections()
		h.after.Wait()
		time.Sleep(50 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	run() // warm up: servers' own goroutines start once
	base := settle()
	for i := 0; i < 20; i++ {
		run()
	}
	deadline := time.Now().Add(10 * time.Second)
	for n := settle(); n > base; n = settle() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after 20 disconnects, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
		}
	}
}
