package overhead

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestSessionGrowsOneStepPerCall(t *testing.T) {
	s := newSession(20 << 10)
	first := s.next()
	if len(first) < 20<<10 || len(first) > 22<<10 {
		t.Fatalf("first body is %d bytes, want about 20 KB", len(first))
	}
	second := s.next()
	var a, b struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(first, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(second, &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Messages) != len(a.Messages)+2 {
		t.Fatalf("second call has %d messages, want %d (one tool step more)", len(b.Messages), len(a.Messages)+2)
	}
	// An agent re-sends its history: the earlier call's messages are a prefix.
	if !bytes.HasPrefix(second, first[:len(first)-2]) {
		t.Fatal("second body does not extend the first")
	}
}

func TestRunMeasuresEveryTarget(t *testing.T) {
	up := httptest.NewServer(Upstream())
	defer up.Close()
	u, _ := url.Parse(up.URL)
	rp := httptest.NewServer(httputil.NewSingleHostReverseProxy(u))
	defer rp.Close()
	// A plain httputil.ReverseProxy (Bare, and native's stand-in here)
	// cuts an answer now and then, more often on a loaded machine
	// (golang/go#40747): bare cuts its first one here, so that the test
	// counts such errors rather than rules them out.
	var cut atomic.Bool
	floor := Bare(u)
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cut.CompareAndSwap(false, true) {
			panic(http.ErrAbortHandler)
		}
		floor.ServeHTTP(w, r)
	}))
	defer bare.Close()
	relay := NewRelay(listen(t), u.Host)
	defer relay.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadGateway)
	}))
	defer broken.Close()

	cfg := Config{
		Targets: []Target{{"direct", up.URL + "/v1"}, {"relay", "http://" + relay.Addr() + "/v1"}, {"bare", bare.URL + "/v1"}, {"native", rp.URL + "/v1"}, {"broken", broken.URL + "/v1"}},
		Sizes:   []int{4 << 10, 30 << 10}, Agents: 2, Calls: 3, Pause: -1, Conns: 2, Duration: 100 * time.Millisecond, Rounds: 2,
	}
	var ended []string
	cfg.Ended = func(phase string) { ended = append(ended, phase) }
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ended, " ") != "latency throughput" {
		t.Errorf("phases ended: %v", ended)
	}
	if len(res.Sizes) != 2 || len(res.Throughput) != 5 {
		t.Fatalf("got %d sizes and %d rates", len(res.Sizes), len(res.Throughput))
	}
	for _, s := range res.Sizes {
		for _, l := range s.Targets {
			want := 2 * 3 * 2 // agents x calls x rounds
			if l.Target == "broken" {
				if l.Errors != want || l.Calls != 0 {
					t.Errorf("%s at %d: %d calls, %d errors; want all %d failed", l.Target, s.Bytes, l.Calls, l.Errors, want)
				}
				continue
			}
			plain := l.Target == "bare" || l.Target == "native"
			if l.Calls+l.Errors != want || l.Calls == 0 || !plain && l.Errors != 0 || l.P50 <= 0 || l.P50 > l.P99 {
				t.Errorf("%s at %d: %+v", l.Target, s.Bytes, l)
			}
		}
	}
	if r := res.Throughput[3]; r.PerSecond <= 0 {
		t.Errorf("native throughput %+v", r)
	}
	var out strings.Builder
	res.Write(&out)
	for _, want := range []string{"### Latency, 4 KB body (2 agents, 0s pause ± 50%)", "### Latency, 30 KB body", "| native |", "| bare |", "| broken |",
		"### Throughput, 30 KB body (2 connections", "native p50 over direct, 30 KB",
		"a TCP relay (parses nothing) p50 over direct", "a bare httputil.ReverseProxy p50 over direct"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	// Not measured at 100 KB here: those goals are left out, not guessed.
	if strings.Contains(out.String(), "p50 over native, 100 KB") {
		t.Errorf("report checks a goal at a size it did not measure:\n%s", out.String())
	}
}

// TestRelay: the relay carries HTTP both ways, keep-alive included, and
// Close ends its connections: the client's next call on them fails.
func TestRelay(t *testing.T) {
	up := httptest.NewServer(Upstream())
	defer up.Close()
	r := NewRelay(listen(t), strings.TrimPrefix(up.URL, "http://"))
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	for range 3 {
		resp, err := c.Post("http://"+r.Addr()+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte("choices")) {
			t.Fatalf("through the relay: %d %s", resp.StatusCode, b)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Post("http://"+r.Addr()+"/v1/chat/completions", "application/json", strings.NewReader(`{}`)); err == nil {
		t.Fatal("a call went through a closed relay")
	}
}

// TestStart: a proxy process is waited for until it listens and stopped
// on demand; one that exits first is an error that shows its output.
func TestStart(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperListen$")
	cmd.Env = append(os.Environ(), "OVERHEAD_HELPER_LISTEN="+addr)
	stop, err := Start(context.Background(), cmd, addr)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if cmd.ProcessState == nil {
		t.Fatalf("process not waited for: %v", cmd.ProcessState)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("still listening after stop")
	}

	_, err = Start(context.Background(), exec.Command("sh", "-c", "echo no store here >&2; exit 3"), addr)
	if err == nil || !strings.Contains(err.Error(), "exited before it listened") || !strings.Contains(err.Error(), "no store here") {
		t.Fatalf("a process that exits first: %v", err)
	}
}

// TestHelperListen is TestStart's process: it listens until killed.
func TestHelperListen(t *testing.T) {
	addr := os.Getenv("OVERHEAD_HELPER_LISTEN")
	if addr == "" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		os.Exit(2)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(2)
		}
		c.Close()
	}
}

func TestCaddy(t *testing.T) {
	up := httptest.NewServer(Upstream())
	defer up.Close()
	base, stop, err := Caddy(context.Background(), strings.TrimPrefix(up.URL, "http://"))
	if errors.Is(err, exec.ErrNotFound) {
		t.Skip("caddy is not installed (optional: rcm bench proxy measures without it)")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := call(context.Background(), http.DefaultClient, base, "s", newSession(1<<10).next()); err != nil {
		t.Fatal(err)
	}
}

func TestRunStopsWithContext(t *testing.T) {
	up := httptest.NewServer(Upstream())
	defer up.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, Config{Targets: []Target{{"direct", up.URL + "/v1"}}, Sizes: []int{1 << 10}, Duration: time.Hour})
	if err == nil || res == nil {
		t.Fatalf("Run on a cancelled context: %v, %v", res, err)
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for _, c := range []struct {
		p    int
		want time.Duration
	}{{50, 3}, {90, 5}, {99, 5}, {1, 1}} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("p%d = %d, want %d", c.p, got, c.want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of nothing")
	}
}

func TestRotatedVisitsEveryTargetOnce(t *testing.T) {
	ts := []Target{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	for round := range 4 {
		var order []string
		for i, tg := range rotated(ts, round) {
			if ts[i] != tg {
				t.Fatalf("index %d holds %s, not %s", i, ts[i].Name, tg.Name)
			}
			order = append(order, tg.Name)
		}
		if len(order) != 3 || order[0] != ts[round%3].Name || order[0] == order[1] || order[1] == order[2] || order[0] == order[2] {
			t.Fatalf("round %d visits %v", round, order)
		}
	}
}

func TestJitterBounds(t *testing.T) {
	up := httptest.NewServer(Upstream())
	defer up.Close()
	if _, err := Run(context.Background(), Config{Targets: []Target{{"direct", up.URL + "/v1"}}, Jitter: 1.5}); err == nil {
		t.Fatal("a jitter above 1 (pauses below zero) was taken")
	}
	for _, c := range []struct{ in, want float64 }{{0, 0.5}, {-1, 0}, {0.2, 0.2}} {
		cfg := Config{Targets: []Target{{}}, Jitter: c.in}
		if err := cfg.defaults(); err != nil || cfg.Jitter != c.want {
			t.Errorf("jitter %g: %g, %v; want %g", c.in, cfg.Jitter, err, c.want)
		}
	}
}

// listen is a loopback listener on a free port.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
