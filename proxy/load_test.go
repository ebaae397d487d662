//go:build load

package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/chattest"
)

// TestLoad drives rcm (rcm mode, real HTTP on 127.0.0.1) with 200
// concurrent sessions whose histories grow by 20 to 60 KB a turn up to
// 1 MB, then start over as new sessions, for 2 minutes
// (RCM_LOAD_DURATION), against a fast local upstream that streams a short
// answer. It wants 0 errors (any status but 200, a transport error or
// X-RCM-Fallback: error) and a bounded RSS, and reports the store writer's
// lag p99. RCM_LOAD_DIR puts the store in another directory (its disk sets
// how fast the store writer keeps up, and so how many finished calls wait
// in memory for their writes). Run:
// go test -tags load -run TestLoad -timeout 30m -v ./proxy
func TestLoad(t *testing.T) {
	dur := 2 * time.Minute
	if v := os.Getenv("RCM_LOAD_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		dur = d
	}
	const sessions, maxHistory = 200, 1 << 20
	const maxRSS = 3 << 30 // what "bounded" means here: 200 sessions x 1 MB bodies, a few copies each

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{`{"choices":[{"delta":{"content":"Done"}}]}`, `{"choices":[{"delta":{"content":" with it."}}]}`, `[DONE]`} {
			io.WriteString(w, "data: "+ev+"\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	defer up.Close()
	cfg := Config{Upstream: up.URL + "/v1"}
	if dir := os.Getenv("RCM_LOAD_DIR"); dir != "" {
		// The store's directory: its disk sets how fast the writer keeps up.
		cfg.DB = filepath.Join(dir, fmt.Sprintf("rcm-load-%d.db", os.Getpid()))
		t.Cleanup(func() { os.Remove(cfg.DB) })
	}
	h, srv, _ := newHandler(t, cfg)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: sessions}}

	var peakRSS atomic.Int64
	stopRSS := make(chan struct{})
	go func() {
		for {
			if n := rss(t); n > peakRSS.Load() {
				peakRSS.Store(n)
			}
			select {
			case <-stopRSS:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()

	var calls, errs, full, bytesSent atomic.Int64
	var firstErr sync.Once
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for gen := 0; time.Now().Before(deadline); gen++ {
				var hist chattest.History
				sid := fmt.Sprintf("load-%d-%d", i, gen)
				for turn := 0; time.Now().Before(deadline); turn++ {
					ws := fmt.Sprintf("/work/ws%d", turn/4%3) // the session switches tasks
					hist.Add(chattest.User(fmt.Sprintf("In %s fix failing test %d of session %d", ws, turn, i)))
					body := hist.Body()
					if len(body) > maxHistory {
						full.Add(1)
						break
					}
					req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(body))
					req.Header.Set("X-Session-Id", sid)
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					calls.Add(1)
					bytesSent.Add(int64(len(body)))
					if err == nil {
						_, err = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if err == nil && (resp.StatusCode != 200 || resp.Header.Get(HeaderFallback) == FallbackError) {
							err = fmt.Errorf("status %d fallback %q", resp.StatusCode, resp.Header.Get(HeaderFallback))
						}
					}
					if err != nil {
						errs.Add(1)
						firstErr.Do(func() { t.Errorf("session %s turn %d: %v", sid, turn, err) })
					}
					id := fmt.Sprintf("call_%d", turn)
					hist.Add(
						chattest.ToolCall(id, "bash", map[string]string{"command": "go test ./...", "workdir": ws}),
						chattest.ToolResult(id, output(ws, i, turn)),
						chattest.Assistant("Fixed step "+strconv.Itoa(turn)),
					)
				}
			}
		}(i)
	}
	wg.Wait()
	answered := time.Now()
	h.after.Wait()
	drain := time.Since(answered)
	close(stopRSS)
	endRSS := rss(t)

	n := calls.Load()
	t.Logf("%d sessions for %v: %d calls (%.1f/s), %.0f MB sent, %d histories reached 1 MB, %d errors",
		sessions, dur, n, float64(n)/dur.Seconds(), float64(bytesSent.Load())/1e6, full.Load(), errs.Load())
	t.Logf("RSS peak %d MB, at end %d MB; store writes drained %v after the last answer",
		peakRSS.Load()>>20, endRSS>>20, drain.Round(time.Millisecond))
	lag := h.metrics.lagHistogram()
	t.Logf("store writer lag (answer to commit): mean %.3fs, p50 <= %gs, p99 <= %gs, p99.9 <= %gs over %d writes",
		lag.GetSampleSum()/float64(lag.GetSampleCount()), h.metrics.lagQuantile(0.5), h.metrics.lagQuantile(0.99), h.metrics.lagQuantile(0.999), lag.GetSampleCount())
	if errs.Load() != 0 {
		t.Errorf("%d errors", errs.Load())
	}
	if peakRSS.Load() > maxRSS {
		t.Errorf("RSS peaked at %d MB, above %d MB", peakRSS.Load()>>20, maxRSS>>20)
	}
}

// output is a tool result of 20 to 60 KB naming files of the workspace.
func output(ws string, session, turn int) string {
	var b strings.Builder
	size := 20<<10 + (session*7919+turn*104729)%(40<<10)
	for line := 0; b.Len() < size; line++ {
		fmt.Fprintf(&b, "%s/pkg%d/file_%d_test.go:%d: expected %d, got %d (case %d)\n", ws, line%13, (line*31+turn)%97, line, line*3, line*5, turn)
	}
	return b.String()
}

// rss is this process's resident set size in bytes.
func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
