package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rcm-dev/rcm/transcript"
)

// TestTooLargeToRouteFallsBack: a call of more messages than
// RouteMessages goes out whole at once, marked too-large; a smaller one of
// the same session is routed.
func TestTooLargeToRouteFallsBack(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, func(c *Config) { c.Mode = Router; c.RouteMessages = 8 })
	small := sessionBody(t, switchRequests[:2], switchDirs[:2]) // 1 system + 5 messages
	large := sessionBody(t, switchRequests, switchDirs)         // 1 system + 9 messages
	resp := post(t, srv.URL+"/v1/chat/completions", small, http.Header{HeaderSession: {"big"}})
	io.Copy(io.Discard, resp.Body)
	if f := resp.Header.Get(HeaderFallback); f != FallbackNone {
		t.Fatalf("small call: fallback %q", f)
	}
	resp = post(t, srv.URL+"/v1/chat/completions", large, http.Header{HeaderSession: {"big"}})
	io.Copy(io.Discard, resp.Body)
	got, _ := rec.last(t)
	if f := resp.Header.Get(HeaderFallback); f != FallbackTooLarge || !bytes.Equal(got, large) || resp.Header.Get(HeaderTask) != "" {
		t.Fatalf("large call: fallback %q task %q, forwarded %d of %d bytes", f, resp.Header.Get(HeaderTask), len(got), len(large))
	}
}

// TestNoRoutingForAGoneClient: a call whose client left before routing is
// not routed.
func TestNoRoutingForAGoneClient(t *testing.T) {
	h, _, _ := newHandler(t, Config{Upstream: "http://127.0.0.1:9/v1", Mode: Router})
	body := sessionBody(t, switchRequests, switchDirs)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil).WithContext(ctx)
	r.Header.Set(HeaderSession, "gone")
	a := h.assemble(r, transcript.OpenAIChat, Router, 0.8, body)
	a.call.Run(func() {}, nil)
	if a.routed || a.plan != nil || !bytes.Equal(a.body, body) {
		t.Fatalf("routed for a client that left: routed=%v fallback=%q", a.routed, a.fallback)
	}
}

// TestStoreLagMetric: every recorded call adds one observation of the
// store writer's lag to /rcm/metrics.
func TestStoreLagMetric(t *testing.T) {
	srv, h := setup(t, &recorder{}, nil)
	body, hdr, path := load(t, "continue_request")
	for i := 0; i < 3; i++ {
		resp := post(t, srv.URL+path, body, hdr)
		io.Copy(io.Discard, resp.Body)
	}
	h.after.Wait()
	got := metricsText(t, srv.URL)
	if !bytes.Contains(got, []byte("rcm_store_lag_seconds_count 3\n")) || !bytes.Contains(got, []byte(`rcm_store_lag_seconds_bucket{le="+Inf"} 3`)) {
		t.Fatalf("metrics:\n%s", got)
	}
	if q := h.metrics.lagQuantile(0.99); !(q > 0 && q <= 60) {
		t.Fatalf("p99 bound %v", q)
	}
}

// TestStoreWaitMetric: a call whose session's earlier writes are still
// pending waits for them, at most their bound (2 s), and /rcm/metrics counts
// the wait, how it ended and its time; a call with nothing pending does not
// count.
func TestStoreWaitMetric(t *testing.T) {
	srv, h := setup(t, &recorder{}, nil)
	body := sessionBody(t, switchRequests[:1], switchDirs)
	hdr := http.Header{HeaderSession: {"ses_wait"}, HeaderMode: {"rcm"}}
	// Writes of an earlier call of the session that outlast the bound.
	earlier, _, _ := h.store.Begin(context.Background(), "ses_wait")
	resp := post(t, srv.URL+"/v1/chat/completions", body, hdr)
	io.Copy(io.Discard, resp.Body)
	earlier.Run(func() {}, nil)
	h.after.Wait()
	resp = post(t, srv.URL+"/v1/chat/completions", body, hdr) // nothing pending
	io.Copy(io.Discard, resp.Body)
	h.after.Wait()
	got := metricsText(t, srv.URL)
	if !bytes.Contains(got, []byte(`rcm_store_waits_total{outcome="bound"} 1`+"\n")) || !bytes.Contains(got, []byte("rcm_store_wait_seconds_count 1\n")) ||
		!bytes.Contains(got, []byte(`rcm_store_wait_seconds_bucket{le="1"} 0`)) || !bytes.Contains(got, []byte(`rcm_store_wait_seconds_bucket{le="2.5"} 1`)) {
		t.Fatalf("metrics:\n%s", got)
	}
}

// metricsText returns what the proxy at base serves at /rcm/metrics.
func metricsText(t *testing.T, base string) []byte {
	t.Helper()
	resp, err := http.Get(base + "/rcm/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
