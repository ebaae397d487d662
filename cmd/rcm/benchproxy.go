package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rcm-dev/rcm/bench/overhead"
)

// proxyBenchConfig is what `rcm bench proxy` is told.
type proxyBenchConfig struct {
	sizes, caddy, store          string
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
		{flag: "store", env: "RCM_BENCH_STORE", help: "a PostgreSQL database (postgres://...; its data is the bench's) on which a second rcm serve is measured beside bbolt's, as native-pg, router-pg and rcm-pg (default: none)", set: stringOpt(&c.store)},
		{flag: "caddy", env: "RCM_BENCH_CADDY", help: "measure Caddy's reverse_proxy too: auto (when on PATH), true or false (default auto)", set: stringOpt(&c.caddy)},
	}
}

// benchProxy measures the proxy's overhead side by side: direct, the
// floors, Caddy, and rcm in each mode, against one fast local upstream.
func benchProxy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := proxyBenchConfig{pause: 100 * time.Millisecond, duration: 2 * time.Second, caddy: "auto", jitter: 0.5}
	if err := parseOptions("bench proxy", args, proxyBenchOptions(&c), false,
		"Usage: rcm bench proxy [flags]\n\nSends the same OpenCode-shaped bodies to a fast local upstream directly, through a TCP relay\n(parses nothing), through a bare httputil.ReverseProxy, through Caddy (when installed) and through rcm serve in native, router and rcm mode,\neach proxy in its own process, and prints latency and throughput side by side with the overhead goals. Every flag has an environment twin."); err != nil {
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
	var (
		err   error
		stops []func()
	)
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
	upAddr := upLn.Addr().String()
	cfg.Targets = append(cfg.Targets, overhead.Target{Name: "direct", Base: "http://" + upAddr + "/v1"})

	// Every proxy runs in its own process, as users run rcm and Caddy: in
	// the bench's process it would share the load generator's scheduler
	// and skip a process switch per hop.
	start := func(name string, args ...string) (string, error) {
		addr, err := overhead.FreeAddr()
		if err != nil {
			return "", err
		}
		cmd, err := selfCommand(append(args, "--listen", addr)...)
		if err != nil {
			return "", err
		}
		stop, err := overhead.Start(ctx, cmd, addr)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		stops = append(stops, stop)
		return "http://" + addr, nil
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	for _, floor := range []string{"relay", "bare"} {
		base, err := start(floor, "bench", "floor", floor, "--upstream", upAddr)
		if err != nil {
			return err
		}
		cfg.Targets = append(cfg.Targets, overhead.Target{Name: floor, Base: base + "/v1"})
	}

	switch c.caddy {
	case "auto", "true":
		base, stop, err := overhead.Caddy(ctx, upAddr)
		switch {
		case err == nil:
			stops = append(stops, stop)
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
	proxyURL, err := start("rcm serve", "serve", "--upstream", "http://"+upAddr+"/v1", "--db", filepath.Join(tmp, "rcm.db"), "--mode", "native")
	if err != nil {
		return err
	}
	for _, m := range []string{"native", "router", "rcm"} {
		cfg.Targets = append(cfg.Targets, overhead.Target{Name: m, Base: proxyURL + "/" + m + "/v1"})
	}
	stores := []struct{ name, url string }{{"bbolt", proxyURL}}
	if c.store != "" {
		pgURL, err := start("rcm serve --store", "serve", "--upstream", "http://"+upAddr+"/v1", "--store", c.store, "--mode", "native")
		if err != nil {
			return err
		}
		for _, m := range []string{"native", "router", "rcm"} {
			cfg.Targets = append(cfg.Targets, overhead.Target{Name: m + "-pg", Base: pgURL + "/" + m + "/v1"})
		}
		stores = append(stores, struct{ name, url string }{"PostgreSQL", pgURL})
	}

	// Each proxy's own count of calls that waited for their session's
	// earlier writes, read as each phase ends.
	waits := make([][]storeWaits, len(stores))
	cfg.Ended = func(string) {
		for i, s := range stores {
			waits[i] = append(waits[i], readWaits(s.url))
		}
	}
	res, err := overhead.Run(ctx, cfg)
	if res != nil {
		res.Write(stdout)
	}
	for i, s := range stores {
		if len(waits[i]) != 2 {
			continue
		}
		lat, all := waits[i][0], waits[i][1]
		fmt.Fprintf(stdout, "\n### Store waits and write lag on %s (rcm's /rcm/metrics, router and rcm mode)\n\n", s.name)
		fmt.Fprintf(stdout, "- latency phases: %d calls waited for their session's earlier writes, %v in all%s\n", lat.n, lat.sum.Round(100*time.Microsecond), lat.outcomes(storeWaits{}))
		fmt.Fprintf(stdout, "- throughput phase (no pause): %d calls waited, %v in all%s\n", all.n-lat.n, (all.sum - lat.sum).Round(100*time.Microsecond), all.outcomes(lat))
		fmt.Fprintf(stdout, "- write lag (answer to stored), mean: latency phases %v, throughput phase %v\n", lat.meanLag(storeWaits{}), all.meanLag(lat))
	}
	return err
}

// storeWaits is what rcm_store_wait_seconds counts: calls and total time,
// and rcm_store_waits_total: calls by how their wait ended.
type storeWaits struct {
	n   int
	sum time.Duration
	by  map[string]int
	// lags and lag count and sum up rcm_store_lag_seconds.
	lags int
	lag  time.Duration
}

// meanLag is the mean write lag of the writes since before.
func (w storeWaits) meanLag(before storeWaits) time.Duration {
	if n := w.lags - before.lags; n > 0 {
		return ((w.lag - before.lag) / time.Duration(n)).Round(100 * time.Microsecond)
	}
	return 0
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
		case name == "rcm_store_lag_seconds_count":
			w.lags = int(f)
		case name == "rcm_store_lag_seconds_sum":
			w.lag = time.Duration(f * float64(time.Second))
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

// selfCommand is this program run with args: what `rcm bench proxy` starts
// its proxies with (tests run their own binary as rcm).
var selfCommand = func(args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.Command(exe, args...), nil
}

// benchFloor serves one of the floors `rcm bench proxy` measures rcm
// against, in a process of its own: "relay" (a TCP relay that parses
// nothing) or "bare" (a bare httputil.ReverseProxy).
func benchFloor(args []string) error {
	var upstream, listen string
	usage := "Usage: rcm bench floor relay|bare --upstream HOST:PORT --listen ADDR\n\nServes a floor of rcm bench proxy: a TCP relay or a bare httputil.ReverseProxy in front of the upstream."
	opts := []option{
		{flag: "upstream", env: "RCM_BENCH_UPSTREAM", help: "host:port of the upstream", set: stringOpt(&upstream)},
		{flag: "listen", env: "RCM_BENCH_LISTEN", help: "address to serve on", set: stringOpt(&listen)},
	}
	if len(args) > 0 && isHelp(args[0]) {
		return parseOptions("bench floor", []string{"--help"}, opts, false, usage) // prints the flags, exits 0
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New("bench floor: missing relay or bare\n\n" + usage)
	}
	kind := args[0]
	if err := parseOptions("bench floor", args[1:], opts, false, usage); err != nil {
		return err
	}
	if upstream == "" || listen == "" {
		return errors.New("bench floor: --upstream and --listen are required")
	}
	if kind != "relay" && kind != "bare" {
		return fmt.Errorf("bench floor: %q: want relay or bare", kind)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if kind == "relay" {
		r := overhead.NewRelay(ln, upstream)
		<-ctx.Done()
		return r.Close()
	}
	srv := &http.Server{Handler: overhead.Bare(&url.URL{Scheme: "http", Host: upstream})}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
