// Package overhead measures what a proxy adds to a model call: the same
// OpenCode-shaped bodies are sent to a fast local upstream directly and
// through each target (a TCP relay and a bare httputil.ReverseProxy as
// floors, Caddy's reverse_proxy when installed, rcm in native, router and
// rcm mode), and the latencies and throughputs are set side by side (`rcm
// bench proxy`, which runs each proxy in its own process: Start).
//
// Latency is measured as a harness meets it: a few agents, each on its own
// session, each waiting a pause after an answer before its next call, every
// call's history one tool step longer than the last (so the router has new
// work each call, as in a real session). Throughput is measured with more
// connections and no pause. Targets are measured in rounds, each round
// visiting every target once (latencies are pooled over rounds, throughput
// is the median round), so that a noisy neighbour on a shared machine skews
// every target alike.
//
// Caveats: the load generator and the upstream share one process and the
// machine with the proxies; the figures compare targets under the same load and are not
// absolute. Timing goals are checked by reading this report, never by
// assertions in tests.
package overhead
