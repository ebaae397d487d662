package proxy

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/internal/pgtest"
	"github.com/rcm-dev/rcm/transcript"
)

// benchNative measures rcm's own work per native-mode request: read, parse,
// session, forward to a local upstream and copy the answer back.
func benchNative(b *testing.B, body []byte) { benchMode(b, Native, body) }

// benchMode measures a mode's work per request of one session whose earlier
// turns are labelled (the steady state: only the current turn is new),
// the body parsed whole (the parse cache is emptied before each call: a
// session's first call after a restart, or one the cache let go).
func benchMode(b *testing.B, mode Mode, body []byte) { benchCalls(b, Config{Mode: mode}, nil, body) }

// benchNext measures the same on the next call of a growing session: the
// call before it sent body less its last message, so the parse cache
// holds all but that message.
func benchNext(b *testing.B, mode Mode, body []byte) { benchNextOn(b, Config{Mode: mode}, body) }

// benchNextOn is benchNext with cfg's mode and store.
func benchNextOn(b *testing.B, cfg Config, body []byte) {
	t, err := transcript.Parse(transcript.OpenAIChat, body, transcript.Hints{})
	if err != nil || len(t.Messages) < 2 {
		b.Fatal(err)
	}
	last := t.Messages[len(t.Messages)-1].Raw
	at := bytes.LastIndex(body, last)
	prev := append(bytes.Clone(bytes.TrimRight(body[:at], ", \n")), body[at+len(last):]...)
	benchCalls(b, cfg, prev, body)
}

// benchCalls sends body once per iteration, timed, after prev (untimed)
// when prev is not nil, or with the parse cache emptied when it is.
func benchCalls(b *testing.B, cfg Config, prev, body []byte) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"choices":[]}`)
	}))
	defer up.Close()
	cfg.Upstream = up.URL + "/v1"
	h, _, _ := newHandler(b, cfg)
	send := func(body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("X-Session-Id", "ses_bench")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 || w.Header().Get(HeaderFallback) == FallbackError {
			b.Fatal(w.Code, w.Header())
		}
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	// ready puts h where a timed call finds it: the session's previous
	// call made, or the parse cache emptied.
	ready := func() {
		h.after.Wait()
		if prev != nil {
			send(prev)
			h.after.Wait()
		} else {
			h.parses = transcript.NewCache(maxParseBytes)
		}
	}
	for b.Loop() {
		send(body)
		// The store writes run after the response, off the request path,
		// while a harness waits seconds for the model: not timed here.
		b.StopTimer()
		ready()
		b.StartTimer()
	}
	b.StopTimer()
	// The least of a few calls: anything else the process allocates
	// meanwhile only adds to a measure.
	least := math.Inf(1)
	for range 5 {
		least = min(least, callAlloc(h, body))
		ready()
	}
	b.ReportMetric(least/float64(len(body)), "alloc/body")
}

// callAlloc returns the bytes allocated while h serves one call of body,
// the body as read included, up to its answer: an upper bound of what
// the call adds to the heap at its peak (the goal is about twice the
// body). The store writes after the answer are not counted.
func callAlloc(h *Handler, body []byte) float64 {
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("X-Session-Id", "ses_bench")
	w := httptest.NewRecorder()
	h.after.Wait()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	h.ServeHTTP(w, req)
	runtime.ReadMemStats(&after)
	h.after.Wait()
	return float64(after.TotalAlloc - before.TotalAlloc)
}

func BenchmarkRouter1MB(b *testing.B) { benchMode(b, Router, capture.Grow(b, 1<<20)) }

func BenchmarkRCM1MB(b *testing.B) { benchMode(b, RCM, capture.Grow(b, 1<<20)) }

// The next call of a growing session, parsed from where it departs from
// the previous one.
func BenchmarkRouter1MBNext(b *testing.B)   { benchNext(b, Router, capture.Grow(b, 1<<20)) }
func BenchmarkRCM1MBNext(b *testing.B)      { benchNext(b, RCM, capture.Grow(b, 1<<20)) }
func BenchmarkRouter100KBNext(b *testing.B) { benchNext(b, Router, capture.Grow(b, 100<<10)) }
func BenchmarkRCM100KBNext(b *testing.B)    { benchNext(b, RCM, capture.Grow(b, 100<<10)) }

// The sizes of the overhead goals below 1 MB (0.5 ms routed over native at
// 100 KB; native near direct at 30 KB).
func BenchmarkNative30KB(b *testing.B)  { benchNative(b, capture.Grow(b, 30<<10)) }
func BenchmarkRouter30KB(b *testing.B)  { benchMode(b, Router, capture.Grow(b, 30<<10)) }
func BenchmarkRCM30KB(b *testing.B)     { benchMode(b, RCM, capture.Grow(b, 30<<10)) }
func BenchmarkNative100KB(b *testing.B) { benchNative(b, capture.Grow(b, 100<<10)) }
func BenchmarkRouter100KB(b *testing.B) { benchMode(b, Router, capture.Grow(b, 100<<10)) }
func BenchmarkRCM100KB(b *testing.B)    { benchMode(b, RCM, capture.Grow(b, 100<<10)) }

// The same on the PostgreSQL store (one read per call, as on bbolt):
// RCM_TEST_POSTGRES's database, a schema of the benchmark's own.
func BenchmarkRouter100KBPostgres(b *testing.B) {
	benchCalls(b, Config{Mode: Router, Store: pgtest.Schema(b)}, nil, capture.Grow(b, 100<<10))
}
func BenchmarkRCM100KBPostgres(b *testing.B) {
	benchCalls(b, Config{Mode: RCM, Store: pgtest.Schema(b)}, nil, capture.Grow(b, 100<<10))
}
func BenchmarkRouter100KBNextPostgres(b *testing.B) {
	benchNextOn(b, Config{Mode: Router, Store: pgtest.Schema(b)}, capture.Grow(b, 100<<10))
}
func BenchmarkRCM100KBNextPostgres(b *testing.B) {
	benchNextOn(b, Config{Mode: RCM, Store: pgtest.Schema(b)}, capture.Grow(b, 100<<10))
}

func BenchmarkNativeSmall(b *testing.B) {
	body := capture.Body(b, "title_request")
	benchNative(b, body)
}

func BenchmarkNative1MB(b *testing.B) { benchNative(b, capture.Grow(b, 1<<20)) }

// BenchmarkDirect1MB is the same round trip without rcm: the floor the
// proxy's overhead is measured against.
func BenchmarkDirect1MB(b *testing.B) {
	body := capture.Grow(b, 1<<20)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"choices":[]}`)
	}))
	defer up.Close()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Post(up.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// streamAnswer is a streamed answer of 500 small SSE events, as a model
// sends one token at a time.
func streamAnswer(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	for i := 0; i < 500; i++ {
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"tok "}}]}`+"\n\n")
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// BenchmarkNativeStream measures native mode on a small call whose answer
// streams 500 events: the per-event path (split, flush) and the tee.
func BenchmarkNativeStream(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(streamAnswer))
	defer up.Close()
	_, srv, _ := newHandler(b, Config{Upstream: up.URL + "/v1", Mode: Native})
	body := capture.Body(b, "title_request")
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("X-Session-Id", "ses_bench")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
