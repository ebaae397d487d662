package proxy

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rcm-dev/rcm/memory"
)

// metrics are rcm's series, served at /rcm/metrics by client_golang. Each
// Handler has a registry of its own, so that tests running several in one
// process count apart.
type metrics struct {
	reg *prometheus.Registry

	calls      *prometheus.CounterVec // mode, kind, fallback, status
	tokensIn   *prometheus.CounterVec // mode
	tokensOut  *prometheus.CounterVec // mode
	parseBytes *prometheus.CounterVec // how
	upstream   *prometheus.CounterVec // mode
	budget     *prometheus.CounterVec // action

	routerCalls   prometheus.Counter
	routerErrors  prometheus.Counter
	routerSeconds prometheus.Counter
	routerTokens  *prometheus.CounterVec // type

	waits       *prometheus.CounterVec // outcome
	unavailable *prometheus.CounterVec // op
	lag         prometheus.Histogram
	wait        prometheus.Histogram

	added *prometheus.HistogramVec // mode
	ttfb  *prometheus.HistogramVec // mode
	ratio *prometheus.HistogramVec // mode
}

// lagBuckets are the upper bounds, in seconds, of the store's lag and
// wait: milliseconds when it keeps up, up to a minute when it does not.
var lagBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// addedBuckets bound rcm's own latency: a tenth of a millisecond for a
// native call, milliseconds for a routed one, seconds with a router model.
var addedBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// ttfbBuckets bound a model's time to its first byte: a local server's
// milliseconds up to a long think.
var ttfbBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// ratioBuckets bound forwarded over received tokens: routing drops other
// tasks' turns (below 1), a task record adds a little (just above 1).
var ratioBuckets = []float64{.05, .1, .2, .3, .4, .5, .6, .7, .8, .9, .95, 1, 1.05, 1.1, 1.25, 1.5, 2}

func newMetrics() *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	m := &metrics{
		reg:        prometheus.NewRegistry(),
		calls:      counter("rcm_calls_total", "Model calls handled, by mode, kind, fallback and upstream status class.", "mode", "kind", "fallback", "status"),
		tokensIn:   counter("rcm_tokens_in_total", "Estimated context tokens received from clients.", "mode"),
		tokensOut:  counter("rcm_tokens_out_total", "Estimated context tokens forwarded upstream.", "mode"),
		parseBytes: counter("rcm_parse_bytes_total", "Request body bytes parsed, by whether they were read or taken over from the session's previous call (the parse cache).", "how"),
		upstream:   counter("rcm_upstream_seconds_total", "Time from sending a call upstream to the end of its answer.", "mode"),
		budget:     counter("rcm_budget_turns_total", "Turns condensed or dropped to fit --context-tokens.", "action"),

		routerCalls:   prometheus.NewCounter(prometheus.CounterOpts{Name: "rcm_router_model_calls_total", Help: "Calls of the router's model classifier."}),
		routerErrors:  prometheus.NewCounter(prometheus.CounterOpts{Name: "rcm_router_model_errors_total", Help: "Failed calls of the router's model classifier."}),
		routerSeconds: prometheus.NewCounter(prometheus.CounterOpts{Name: "rcm_router_model_seconds_total", Help: "Time spent in the router's model classifier."}),
		routerTokens:  counter("rcm_router_model_tokens_total", "Tokens of the router's model classifier.", "type"),

		waits:       counter("rcm_store_waits_total", "Calls that waited for their session's earlier store writes before routing, by how the wait ended.", "outcome"),
		unavailable: counter("rcm_store_unavailable_total", "Calls that found the store unreachable (served without it), by what they did.", "op"),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rcm_store_lag_seconds",
			Help: "Time from a call's answer to its store write committed.", Buckets: lagBuckets}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rcm_store_wait_seconds",
			Help: "Time calls waited for their session's earlier store writes before routing.", Buckets: lagBuckets}),

		added: histogram("rcm_added_latency_seconds", "Time rcm adds before a call goes upstream: from its request's arrival to its headers written upstream (reading, routing, assembly, the upstream connection).", addedBuckets, "mode"),
		ttfb:  histogram("rcm_upstream_ttfb_seconds", "Time from a call's headers written upstream to the first byte of the upstream's answer.", ttfbBuckets, "mode"),
		ratio: histogram("rcm_forwarded_token_ratio", "Estimated context tokens forwarded over tokens received, per call.", ratioBuckets, "mode"),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.calls, m.tokensIn, m.tokensOut, m.parseBytes, m.upstream, m.budget,
		m.routerCalls, m.routerErrors, m.routerSeconds, m.routerTokens,
		m.waits, m.unavailable, m.lag, m.wait, m.added, m.ttfb, m.ratio,
	)
	return m
}

// observeLag counts the time from a call's answer to its store write: how
// far the session's writer runs behind the traffic.
func (m *metrics) observeLag(d time.Duration) { m.lag.Observe(d.Seconds()) }

// observeWait counts a call that waited for its session's earlier writes
// before routing (memory.Store.Begin), how long, and how the wait ended
// (memory.Wait); a call with nothing to wait for is not counted.
func (m *metrics) observeWait(w memory.Wait) {
	if w.Outcome == "" {
		return
	}
	m.waits.WithLabelValues(w.Outcome).Inc()
	m.wait.Observe(w.Took.Seconds())
}

// observe counts one assembled call once its answer has gone out.
func (m *metrics) observe(a *assembly) {
	mode := string(a.mode)
	m.calls.WithLabelValues(mode, a.kind(), a.fallback, statusClass(a.status)).Inc()
	m.tokensIn.WithLabelValues(mode).Add(float64(a.tokensIn))
	m.tokensOut.WithLabelValues(mode).Add(float64(a.tokensOut))
	if a.tokensIn > 0 {
		m.ratio.WithLabelValues(mode).Observe(float64(a.tokensOut) / float64(a.tokensIn))
	}
	if out, ok := a.clock.at(&a.clock.out); ok {
		m.added.WithLabelValues(mode).Observe(out.Sub(a.clock.in).Seconds())
		if first, ok := a.clock.at(&a.clock.first); ok {
			m.ttfb.WithLabelValues(mode).Observe(first.Sub(out).Seconds())
		}
	}
	if t := a.transcript; t != nil {
		m.parseBytes.WithLabelValues("read").Add(float64(len(t.Body) - t.Reused()))
		m.parseBytes.WithLabelValues("reused").Add(float64(t.Reused()))
	}
	if a.complete {
		m.upstream.WithLabelValues(mode).Add(a.latency.Seconds())
	}
	if a.fit.Condensed+a.fit.Dropped > 0 {
		m.budget.WithLabelValues("condensed").Add(float64(a.fit.Condensed))
		m.budget.WithLabelValues("dropped").Add(float64(a.fit.Dropped))
	}
	if a.plan != nil && a.plan.Usage.Calls > 0 {
		u := a.plan.Usage
		m.routerCalls.Add(float64(u.Calls))
		m.routerErrors.Add(float64(u.Errors))
		m.routerSeconds.Add(u.Latency.Seconds())
		m.routerTokens.WithLabelValues("prompt").Add(float64(u.PromptTokens))
		m.routerTokens.WithLabelValues("completion").Add(float64(u.CompletionTokens))
	}
}

func statusClass(s int) string {
	if s == 0 {
		return "none"
	}
	return strconv.Itoa(s/100) + "xx"
}

func (h *Handler) serveMetrics(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(h.metrics.reg, promhttp.HandlerOpts{ErrorLog: h.errLog}).ServeHTTP(w, r)
}

// clock marks a call's way through rcm: its request's arrival, its headers
// written upstream and the upstream's first byte, and for its trace, its
// routing and assembly. The last two are set by
// the transport's goroutines (httptrace), hence atomic; the last write
// wins when the transport retries on a fresh connection.
type clock struct {
	in         time.Time
	out, first atomic.Int64 // UnixNano; 0 until it happens
	// The routing's start and end and the assembly's end (zero when
	// they did not happen), for the call's trace.
	route, routed, assembled time.Time
}

// trace returns ctx with the client trace that sets c's upstream marks.
func (c *clock) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders:         func() { c.out.Store(time.Now().UnixNano()) },
		GotFirstResponseByte: func() { c.first.Store(time.Now().UnixNano()) },
	})
}

// at returns the time of mark v, false when it has not happened.
func (c *clock) at(v *atomic.Int64) (time.Time, bool) {
	n := v.Load()
	return time.Unix(0, n), n != 0
}
