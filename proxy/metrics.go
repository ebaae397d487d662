package proxy

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// metrics are rcm's counters, served at /rcm/metrics in the Prometheus text
// format. A handful of counters do not warrant a client library.
type metrics struct {
	mu       sync.Mutex
	counters map[string]float64 // series ("name{labels}") -> value
	help     map[string]string  // metric name -> help text
	lag      histogram          // rcm_store_lag_seconds
	wait     histogram          // rcm_store_wait_seconds
}

// lagBuckets are the upper bounds, in seconds, of rcm_store_lag_seconds
// and rcm_store_wait_seconds.
var lagBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// histogram counts observations in lagBuckets (the last count is +Inf).
type histogram struct {
	counts [16]uint64
	sum    float64
	n      uint64
}

func (h *histogram) observe(d time.Duration) {
	s := d.Seconds()
	h.counts[sort.SearchFloat64s(lagBuckets, s)]++
	h.sum += s
	h.n++
}

// observeLag counts the time from a call's answer to its store write: how
// far the session's writer runs behind the traffic.
func (m *metrics) observeLag(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lag.observe(d)
}

// observeWait counts a call that waited for its session's earlier writes
// before routing (see pending), how long, and how the wait ended: "ahead"
// (they were worked out, still to commit), "done" (committed), "bound"
// (maxPendingWait passed) or "cancelled" (the client left).
func (m *metrics) observeWait(d time.Duration, outcome string) {
	m.add("rcm_store_waits_total", "Calls that waited for their session's earlier store writes before routing, by how the wait ended.", 1, "outcome", outcome)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.wait.observe(d)
}

// lagQuantile returns the upper bound of the bucket holding the q-quantile
// of the store lag (+Inf past the last bucket, 0 with no observation).
func (m *metrics) lagQuantile(q float64) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var seen uint64
	for i, c := range m.lag.counts {
		seen += c
		if m.lag.n > 0 && float64(seen) >= q*float64(m.lag.n) {
			if i == len(lagBuckets) {
				return math.Inf(1)
			}
			return lagBuckets[i]
		}
	}
	return 0
}

func (m *metrics) add(name, help string, v float64, labels ...string) {
	var b strings.Builder
	b.WriteString(name)
	if len(labels) > 0 {
		b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(labels[i])
			b.WriteByte('=')
			b.WriteString(strconv.Quote(labels[i+1]))
		}
		b.WriteByte('}')
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counters == nil {
		m.counters, m.help = map[string]float64{}, map[string]string{}
	}
	m.counters[b.String()] += v
	m.help[name] = help
}

// observe counts one assembled call once its answer has gone out.
func (m *metrics) observe(a *assembly) {
	mode := string(a.mode)
	m.add("rcm_calls_total", "Model calls handled, by mode, kind, fallback and upstream status class.", 1,
		"mode", mode, "kind", a.kind(), "fallback", a.fallback, "status", statusClass(a.status))
	m.add("rcm_tokens_in_total", "Estimated context tokens received from clients.", float64(a.tokensIn), "mode", mode)
	m.add("rcm_tokens_out_total", "Estimated context tokens forwarded upstream.", float64(a.tokensOut), "mode", mode)
	if t := a.transcript; t != nil {
		const help = "Request body bytes parsed, by whether they were read or taken over from the session's previous call (the parse cache)."
		m.add("rcm_parse_bytes_total", help, float64(len(t.Body)-t.Reused()), "how", "read")
		m.add("rcm_parse_bytes_total", help, float64(t.Reused()), "how", "reused")
	}
	if a.complete {
		m.add("rcm_upstream_seconds_total", "Time from sending a call upstream to the end of its answer.", a.latency.Seconds(), "mode", mode)
	}
	if a.fit.Condensed+a.fit.Dropped > 0 {
		m.add("rcm_budget_turns_total", "Turns condensed or dropped to fit --context-tokens.", float64(a.fit.Condensed), "action", "condensed")
		m.add("rcm_budget_turns_total", "Turns condensed or dropped to fit --context-tokens.", float64(a.fit.Dropped), "action", "dropped")
	}
	if a.plan != nil && a.plan.Usage.Calls > 0 {
		u := a.plan.Usage
		m.add("rcm_router_model_calls_total", "Calls of the router's model classifier.", float64(u.Calls))
		m.add("rcm_router_model_errors_total", "Failed calls of the router's model classifier.", float64(u.Errors))
		m.add("rcm_router_model_seconds_total", "Time spent in the router's model classifier.", u.Latency.Seconds())
		m.add("rcm_router_model_tokens_total", "Tokens of the router's model classifier.", float64(u.PromptTokens), "type", "prompt")
		m.add("rcm_router_model_tokens_total", "Tokens of the router's model classifier.", float64(u.CompletionTokens), "type", "completion")
	}
}

func statusClass(s int) string {
	if s == 0 {
		return "none"
	}
	return fmt.Sprintf("%dxx", s/100)
}

func (m *metrics) write(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	series := make([]string, 0, len(m.counters))
	for s := range m.counters {
		series = append(series, s)
	}
	sort.Strings(series)
	last := ""
	for _, s := range series {
		name, _, _ := strings.Cut(s, "{")
		if name != last {
			fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", name, m.help[name], name)
			last = name
		}
		fmt.Fprintf(w, "%s %g\n", s, m.counters[s])
	}
	m.lag.write(w, "rcm_store_lag_seconds", "Time from a call's answer to its store write committed.")
	m.wait.write(w, "rcm_store_wait_seconds", "Time calls waited for their session's earlier store writes before routing.")
}

// write writes h in the Prometheus text format.
func (h *histogram) write(w io.Writer, name, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum uint64
	for i, c := range h.counts {
		cum += c
		le := "+Inf"
		if i < len(lagBuckets) {
			le = fmt.Sprint(lagBuckets[i])
		}
		fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", name, le, cum)
	}
	fmt.Fprintf(w, "%s_sum %g\n%s_count %d\n", name, h.sum, name, h.n)
}

func (h *Handler) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	h.metrics.write(w)
}
