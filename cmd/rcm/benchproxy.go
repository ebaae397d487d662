package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rcm-dev/rcm/bench/overhead"
	"github.com/rcm-dev/rcm/proxy"
)

// proxyBenchConfig is what `rcm bench proxy` is told.
type proxyBenchConfig struct {
	sizes, caddy                 string
	agents, calls, conns, rounds int64
	pause, duration              time.Duration
	jitter                       float64
}

func proxyBenchOptions(c *proxyBenchConfig) []option {
	return []option{
		{flag: "sizes", env: "RCM_BENCH_SIZES", help: "comma-separated body sizes of the latency phase, in KB (default 30,100,1024)", set: stringOpt(&c.sizes)},
		{flag: "agents", env: "RCM_BENCH_AGENTS", help: "concurrent sessions of the latency phase (default 4)", set: intOpt(&c.agents)},
		{flag: "calls", env: "RCM_BENCH_CALLS", help: "calls per session and round (default 10)", set: intOpt(&c.calls)},
		{flag: "pause", env: "RCM_BENCH_PAUSE", help: "wait between an answer and the session's next call (default 100ms)", set: durationOpt(&c.pause)},
		{flag: "jitter", env: "RCM_BENCH_JITTER", help: "spread of each pause, as a fraction of it, so agents drift apart; 0 calls in lock step (default 0.5)", set: floatOpt(&c.jitter)},
		{flag: "conns", env: "RCM_BENCH_CONNS", help: "connections of the throughput phase (default 8)", set: intOpt(&c.conns)},
		{flag: "duration", env: "RCM_BENCH_DURATION", help: "throughput phase per target and round (default 2s)", set: durationOpt(&c.duration)},
		{flag: "rounds", env: "RCM_BENCH_ROUNDS", help: "rounds over every target (default 3)", set: intOpt(&c.rounds)},
		{flag: "caddy", env: "RCM_BENCH_CADDY", help: "measure Caddy's reverse_proxy too: auto (when on PATH), true or false (default auto)", set: stringOpt(&c.caddy)},
	}
}

// benchProxy measures the proxy's overhead side by side: direct, Caddy,
// and rcm in each mode, against one fast local upstream.
func benchProxy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := proxyBenchConfig{pause: 100 * time.Millisecond, duration: 2 * time.Second, caddy: "auto", jitter: 0.5}
	if err := parseOptions("bench proxy", args, proxyBenchOptions(&c), false,
		"Usage: rcm bench proxy [flags]\n\nSends the same OpenCode-shaped bodies to a fast local upstream directly, through a TCP relay\n(parses nothing), through a bare httputil.ReverseProxy, through Caddy (when installed) and through an in-process rcm in native, router and rcm mode, and prints latency\nand throughput side by side with the overhead goals. Every flag has an environment twin."); err != nil {
		return err
	}
	cfg := overhead.Config{Agents: int(c.agents), Calls: int(c.calls), Conns: int(c.conns), Rounds: int(c.rounds),
		Pause: c.pause, Jitter: c.jitter, Duration: c.duration, Progress: stderr}
	if cfg.Pause == 0 {
		cfg.Pause = -1 // --pause 0: none, not the default
	}
	if cfg.Jitter == 0 {
		cfg.Jitter = -1 // --jitter 0: lock step, not the default
	}
	var err error
	if cfg.Sizes, err = kilobytes(c.sizes); err != nil {
		return err
	}

	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	up := &http.Server{Handler: overhead.Upstream()}
	go up.Serve(upLn)
	defer up.Close()
	upURL := "http://" + upLn.Addr().String()
	cfg.Targets = append(cfg.Targets, overhead.Target{Name: "direct", Base: upURL + "/v1"})

	relay, err := overhead.NewRelay(upLn.Addr().String())
	if err != nil {
		return err
	}
	defer relay.Close()
	cfg.Targets = append(cfg.Targets, overhead.Target{Name: "relay", Base: "http://" + relay.Addr() + "/v1"})

	bareLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	bare := &http.Server{Handler: overhead.Bare(&url.URL{Scheme: "http", Host: upLn.Addr().String()})}
	go bare.Serve(bareLn)
	defer bare.Close()
	cfg.Targets = append(cfg.Targets, overhead.Target{Name: "bare", Base: "http://" + bareLn.Addr().String() + "/v1"})

	switch c.caddy {
	case "auto", "true":
		base, stop, err := overhead.Caddy(ctx, upLn.Addr().String())
		switch {
		case err == nil:
			defer stop()
			cfg.Targets = append(cfg.Targets, overhead.Target{Name: "caddy", Base: base})
		case errors.Is(err, exec.ErrNotFound) && c.caddy == "auto":
			fmt.Fprintln(stderr, "note: caddy is not installed; measuring without it")
		default:
			return err
		}
	case "false":
	default:
		return fmt.Errorf("--caddy %q: want auto, true or false", c.caddy)
	}

	tmp, err := os.MkdirTemp("", "rcm-bench-proxy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	proxyURL, stopProxy, err := startProxy(proxy.Config{Upstream: upURL + "/v1", DB: filepath.Join(tmp, "rcm.db"), Mode: proxy.Native},
		io.Discard, slog.LevelError, nil, stderr)
	if err != nil {
		return err
	}
	defer stopProxy()
	for _, m := range []string{"native", "router", "rcm"} {
		cfg.Targets = append(cfg.Targets, overhead.Target{Name: m, Base: proxyURL + "/" + m + "/v1"})
	}

	// The proxy's own count of calls that waited for their session's
	// earlier writes, read as each phase ends.
	var waits []storeWaits
	cfg.Ended = func(string) { waits = append(waits, readWaits(proxyURL)) }
	res, err := overhead.Run(ctx, cfg)
	if res != nil {
		res.Write(stdout)
	}
	if len(waits) == 2 {
		lat, all := waits[0], waits[1]
		fmt.Fprintf(stdout, "\n### Store waits (rcm's /rcm/metrics, router and rcm mode)\n\n")
		fmt.Fprintf(stdout, "- latency phases: %d calls waited for their session's earlier writes, %v in all%s\n", lat.n, lat.sum.Round(100*time.Microsecond), lat.outcomes(storeWaits{}))
		fmt.Fprintf(stdout, "- throughput phase (no pause): %d calls waited, %v in all%s\n", all.n-lat.n, (all.sum - lat.sum).Round(100*time.Microsecond), all.outcomes(lat))
	}
	return err
}

// storeWaits is what rcm_store_wait_seconds counts: calls and total time,
// and rcm_store_waits_total: calls by how their wait ended.
type storeWaits struct {
	n   int
	sum time.Duration
	by  map[string]int
}

// outcomes describes how the waits since before ended, "" when none did:
// "ahead" waits ended when the writes were worked out, "done" ones when
// they had committed.
func (w storeWaits) outcomes(before storeWaits) string {
	var parts []string
	for _, o := range slices.Sorted(maps.Keys(w.by)) {
		if n := w.by[o] - before.by[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// readWaits reads the store waits from the proxy's metrics; zero when it
// cannot.
func readWaits(base string) storeWaits {
	resp, err := http.Get(base + "/rcm/metrics")
	if err != nil {
		return storeWaits{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	w := storeWaits{by: map[string]int{}}
	for line := range strings.Lines(string(b)) {
		name, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil:
		case strings.HasPrefix(name, `rcm_store_waits_total{outcome="`):
			w.by[strings.TrimSuffix(strings.TrimPrefix(name, `rcm_store_waits_total{outcome="`), `"}`)] = int(f)
		case name == "rcm_store_wait_seconds_count":
			w.n = int(f)
		case name == "rcm_store_wait_seconds_sum":
			w.sum = time.Duration(f * float64(time.Second))
		}
	}
	return w
}

// kilobytes parses a comma-separated list of sizes in KB; "" is none.
func kilobytes(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--sizes %q: want positive sizes in KB", s)
		}
		out = append(out, n<<10)
	}
	return out, nil
}
