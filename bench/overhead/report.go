package overhead

import (
	"fmt"
	"io"
	"time"
)

// Goals are the overhead goals the report checks, by target name: routed
// modes over native at 100 KB and 1 MB, native over direct at 30 KB, native
// throughput against Caddy's.
var goals = []struct {
	what        string
	target, ref string
	size        int
	max         time.Duration
}{
	{"router p50 over native, 1 MB", "router", "native", 1 << 20, 2 * time.Millisecond},
	{"rcm p50 over native, 1 MB", "rcm", "native", 1 << 20, 2 * time.Millisecond},
	{"router p50 over native, 100 KB", "router", "native", 100 << 10, 500 * time.Microsecond},
	{"rcm p50 over native, 100 KB", "rcm", "native", 100 << 10, 500 * time.Microsecond},
	{"native p50 over direct, 30 KB", "native", "direct", 30 << 10, 100 * time.Microsecond},
}

// Write prints the result as Markdown tables, then the goals it can check.
func (r *Result) Write(w io.Writer) {
	cfg := r.Config
	for _, s := range r.Sizes {
		fmt.Fprintf(w, "\n### Latency, %s body (%d agents, %s pause ± %.0f%%)\n\n", bytesString(s.Bytes), cfg.Agents, cfg.Pause, 100*cfg.Jitter)
		fmt.Fprintln(w, "| target | p50 | p90 | p99 | p50 over direct | calls | errors |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
		ref := s.Targets[0].P50
		for _, l := range s.Targets {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %+.2f ms | %d | %d |\n", l.Target, ms(l.P50), ms(l.P90), ms(l.P99),
				float64(l.P50-ref)/1e6, l.Calls, l.Errors)
		}
	}
	fmt.Fprintf(w, "\n### Throughput, %s body (%d connections, no pause)\n\n", bytesString(cfg.RateSize), cfg.Conns)
	fmt.Fprintln(w, "| target | req/s | vs direct | vs caddy | errors |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	caddy := r.rate("caddy")
	for _, t := range r.Throughput {
		vsCaddy := "–"
		if caddy > 0 {
			vsCaddy = fmt.Sprintf("%.2fx", t.PerSecond/caddy)
		}
		fmt.Fprintf(w, "| %s | %.0f | %.2fx | %s | %d |\n", t.Target, t.PerSecond, t.PerSecond/r.Throughput[0].PerSecond, vsCaddy, t.Errors)
	}
	fmt.Fprintln(w, "\n### Goals")
	fmt.Fprintln(w)
	for _, g := range goals {
		a, b := r.p50(g.target, g.size), r.p50(g.ref, g.size)
		if a < 0 || b < 0 {
			continue
		}
		fmt.Fprintf(w, "- %s: %+.2f ms (goal <= %.1f ms): %s\n", g.what, float64(a-b)/1e6, float64(g.max)/1e6, verdict(a-b <= g.max))
	}
	if n, c := r.rate("native"), caddy; n > 0 && c > 0 {
		fmt.Fprintf(w, "- native throughput vs caddy: %.2fx (goal >= 1.00x): %s\n", n/c, verdict(n >= c))
	}
	// The floors the 30 KB goal is read against: a hop that parses
	// nothing, a Go proxy that does nothing.
	if b, d, n := r.p50("bare", 30<<10), r.p50("direct", 30<<10), r.p50("native", 30<<10); b >= 0 && d >= 0 && n >= 0 {
		relay := ""
		if l := r.p50("relay", 30<<10); l >= 0 {
			relay = fmt.Sprintf("a TCP relay (parses nothing) p50 over direct %+.2f ms; ", float64(l-d)/1e6)
		}
		fmt.Fprintf(w, "- for reference, 30 KB: %sa bare httputil.ReverseProxy p50 over direct %+.2f ms; native over it %+.2f ms\n",
			relay, float64(b-d)/1e6, float64(n-b)/1e6)
	}
}

// p50 returns target's median latency at size, or -1 when not measured.
func (r *Result) p50(target string, size int) time.Duration {
	for _, s := range r.Sizes {
		if s.Bytes != size {
			continue
		}
		for _, l := range s.Targets {
			if l.Target == target && l.Calls > 0 {
				return l.P50
			}
		}
	}
	return -1
}

func (r *Result) rate(target string) float64 {
	for _, t := range r.Throughput {
		if t.Target == target {
			return t.PerSecond
		}
	}
	return 0
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }

func bytesString(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
