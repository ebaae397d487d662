package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/transcript"
)

// TestCutStreamAbortsClient: an upstream that drops a chunked SSE stream
// mid-chunk reaches the client as a broken response, not a clean 200, and
// the cut answer is not recorded as a completed call.
func TestCutStreamAbortsClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
					"f\r\ndata: {\"n\":1}\n\n\r\n"+
					"40\r\ndata: {\"trunc")
			}()
		}
	}()
	h, srv, _ := newHandler(t, Config{Upstream: "http://" + ln.Addr().String() + "/v1"})
	body, hdr, path := load(t, "continue_request")
	hdr.Set("X-RCM-Session", "ses_cut")
	resp := post(t, srv.URL+path, body, hdr)
	got, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("client read a clean %d answer %q; want an error", resp.StatusCode, got)
	}
	h.after.Wait()
	if _, ok, err := h.store.Session("ses_cut"); ok || err != nil {
		t.Fatalf("a cut answer was recorded as a completed call (err %v)", err)
	}
}

// TestTrailersAndInformationalPass: 1xx responses (103 Early Hints) and
// trailers reach the client.
func TestTrailersAndInformationalPass(t *testing.T) {
	rec := &recorder{answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</x>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.Header().Set("Trailer", "X-Usage")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"choices":[]}`)
		w.Header().Set("X-Usage", "42")
	}}
	srv, _ := setup(t, rec, nil)
	body, hdr, path := load(t, "continue_request")
	var early []int
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			if h.Get("Link") != "" {
				early = append(early, code)
			}
			return nil
		},
	})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, bytes.NewReader(body))
	req.Header = hdr
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	if len(early) != 1 || early[0] != http.StatusEarlyHints {
		t.Errorf("1xx seen %v, want [103] with its Link", early)
	}
	if resp.Trailer.Get("X-Usage") != "42" {
		t.Errorf("trailer %v, want X-Usage: 42", resp.Trailer)
	}
}

// TestEventsSplitsReads: a read holding several SSE events is handed on one
// event at a time (each is flushed on its own); the tail and the source's
// error follow.
func TestEventsSplitsReads(t *testing.T) {
	e := &events{src: io.NopCloser(&oneRead{b: "data: 1\n\ndata: 2\r\n\r\ndata: 3"})}
	var got []string
	buf := make([]byte, 64)
	for {
		n, err := e.Read(buf)
		if n > 0 {
			got = append(got, string(buf[:n]))
		}
		if err != nil {
			if err != io.ErrUnexpectedEOF {
				t.Fatalf("error %v, want the source's", err)
			}
			break
		}
	}
	want := []string{"data: 1\n\n", "data: 2\r\n\r\n", "data: 3"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("reads %q, want %q", got, want)
	}
}

// TestEndingFindsTerminalEvent: the terminal event is found however the
// stream is cut into reads (a line, a field name, the blank line that
// ends the event split between two), and only once it has passed whole;
// a long event is read through without being held.
func TestEndingFindsTerminalEvent(t *testing.T) {
	long := `data: {"type":"response.output_text.delta","delta":"` + strings.Repeat("x", 3*maxEventHead) + `"}` + "\r\n\r\n"
	stream := "event: response.created\ndata: {\"type\":\"response.created\"}\n\n" + long +
		`data: {"type":"response.completed","response":{"output":[` + strings.Repeat(`{"type":"message"},`, 40) + `{}]}}` + "\n\n"
	for size := 1; size <= len(stream); size++ {
		d := &ending{format: transcript.OpenAIResponses}
		for i := 0; i < len(stream); i += size {
			if d.final {
				t.Fatalf("reads of %d: final before byte %d", size, i)
			}
			d.scan([]byte(stream[i:min(i+size, len(stream))]))
		}
		if !d.final || cap(d.line) > 2*maxEventHead || cap(d.data) > 2*maxEventHead {
			t.Fatalf("reads of %d: final %v, kept %d and %d bytes", size, d.final, cap(d.line), cap(d.data))
		}
	}
}

// oneRead returns b and an error in a single Read.
type oneRead struct{ b string }

func (o *oneRead) Read(p []byte) (int, error) {
	if o.b == "" {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, o.b)
	o.b = o.b[n:]
	return n, io.ErrUnexpectedEOF
}

// closedAfter is a client body that the server closed as soon as its
// declared bytes were read, as net/http does once the answer's headers go
// out: any read past them fails.
type closedAfter struct{ data []byte }

func (c *closedAfter) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, errors.New("http: invalid Read on closed Body")
	}
	n := copy(p, c.data)
	c.data = c.data[n:]
	return n, nil
}

func (c *closedAfter) Close() error { return nil }

// TestPassThroughBodyEndsAtItsLength: a body rcm streams upstream
// unparsed (a route other than the model calls) ends at its declared
// length. net/http's transport reads once more past it; were that read to
// reach a body the server has closed meanwhile, the answer being relayed
// would be cut (golang/go#40747).
func TestPassThroughBodyEndsAtItsLength(t *testing.T) {
	payload := []byte(`{"model":"m","input":"` + strings.Repeat("a", 100<<10) + `"}`)
	var got int
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = len(b)
		io.WriteString(w, `{"data":[]}`)
	}))
	defer up.Close()
	h, _, _ := newHandler(t, Config{Upstream: up.URL + "/v1", AnthropicUpstream: up.URL})
	for _, path := range []string{"/v1/embeddings", "/v1/messages/count_tokens"} {
		req := httptest.NewRequest(http.MethodPost, path, nil)
		req.Body, req.ContentLength = &closedAfter{data: bytes.Clone(payload)}, int64(len(payload))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 || w.Body.String() != `{"data":[]}` || got != len(payload) {
			t.Errorf("%s: %d %q, upstream read %d of %d bytes", path, w.Code, w.Body.String(), got, len(payload))
		}
	}
}

func TestDropRCMHeaders(t *testing.T) {
	hdr := http.Header{"X-Rcm-Task": {"a"}, "x-rcm-mode": {"rcm"}, "X-RCM-Threshold": {"0.5"}, "X-Rcm": {"kept"},
		"X-Session-Id": {"s"}, "Authorization": {"Bearer k"}}
	dropRCMHeaders(hdr)
	want := http.Header{"X-Rcm": {"kept"}, "X-Session-Id": {"s"}, "Authorization": {"Bearer k"}}
	if !reflect.DeepEqual(hdr, want) {
		t.Fatalf("got %v, want %v", hdr, want)
	}
}

// TestCompleteAtTerminalEvent: a call is complete, and recorded, once its
// terminal event has reached the client, though the client then closes the
// connection before the upstream has ended its stream (Codex does so on
// response.completed); a client that leaves before the terminal event
// cancels the upstream call, and nothing is recorded.
func TestCompleteAtTerminalEvent(t *testing.T) {
	for _, tc := range []struct {
		path, body, final string
		events            []string
	}{
		{"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			"data: [DONE]\n\n", []string{`data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\n\n"}},
		{"/v1/messages", `{"model":"m","stream":true,"max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`,
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			[]string{"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[]}}\n\n"}},
		{"/v1/responses", `{"model":"m","stream":true,"input":[{"role":"user","content":"hi"}]}`,
			// No event field: the type in the data says it ends the answer.
			`data: {"type":"response.completed","response":{"id":"resp_1","output":[]}}` + "\n\n",
			[]string{`data: {"type":"response.created","response":{"id":"resp_1"}}` + "\n\n"}},
	} {
		for _, leave := range []string{"after", "before"} {
			t.Run(strings.TrimPrefix(tc.path, "/v1/")+"-"+leave, func(t *testing.T) {
				cancelled := make(chan struct{})
				up := func(w http.ResponseWriter, r *http.Request) {
					io.ReadAll(r.Body)
					w.Header().Set("Content-Type", "text/event-stream")
					for _, e := range tc.events {
						io.WriteString(w, e)
					}
					if leave == "after" {
						io.WriteString(w, tc.final)
					}
					w.(http.Flusher).Flush()
					<-r.Context().Done() // the stream stays open until the client leaves
					close(cancelled)
				}
				srv, h := setup(t, http.HandlerFunc(up), nil)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+tc.path, strings.NewReader(tc.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-RCM-Session", "ses_end")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				want := tc.events[len(tc.events)-1]
				if leave == "after" {
					want = tc.final
				}
				var got []byte
				for buf := make([]byte, 4096); !bytes.HasSuffix(got, []byte(want)); {
					n, err := resp.Body.Read(buf)
					got = append(got, buf[:n]...)
					if err != nil {
						t.Fatalf("read %q: %v", got, err)
					}
				}
				cancel()
				resp.Body.Close()
				select {
				case <-cancelled:
				case <-time.After(10 * time.Second):
					t.Fatal("upstream call still running after the client left")
				}
				h.after.Wait()
				s, ok, err := h.store.Session("ses_end")
				if err != nil || ok != (leave == "after") {
					t.Fatalf("client left %s the terminal event: recorded %v %+v (err %v)", leave, ok, s, err)
				}
			})
		}
	}
}
