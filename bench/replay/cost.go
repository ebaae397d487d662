package replay

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/bench/stat"
)

// Cost with prompt caching. Providers bill input that repeats a prefix of
// a recent call at a fraction of the price (Anthropic cache reads, OpenAI
// cached tokens). The model here: a call's context is its body with the
// messages array moved to the end (providers put tools and system before
// the conversation); its cached part is the longest prefix it shares with
// the context of any earlier call of the session, the rest is billed in
// full. Cache lifetimes are ignored: a replay has no pauses.

// DefaultCachePrice is the price of a cached input token relative to an
// uncached one (Anthropic and OpenAI bill cache reads at a tenth or less).
const DefaultCachePrice = 0.1

// CallCost is one call's input tokens: Cached repeat a prefix the session
// sent before, Rest do not.
type CallCost struct {
	Cached, Rest int
}

// cacheCosts returns each context's cached part and rest, in tokens
// (bytes/4), given the contexts of one session in the order they were sent.
func cacheCosts(contexts [][]byte) []CallCost {
	out := make([]CallCost, len(contexts))
	for k, c := range contexts {
		lcp := 0
		for _, prev := range contexts[:k] {
			lcp = max(lcp, commonPrefix(prev, c))
		}
		cached := lcp / 4 // a partly cached token is billed whole
		out[k] = CallCost{Cached: cached, Rest: tokensOf(len(c)) - cached}
	}
	return out
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// callContext is the context of a forwarded body as a provider caches
// it: everything but the messages array, then the array (msgs is its
// offset and length in body; a body without one is its own context).
func callContext(body []byte, off, n int) []byte {
	if n == 0 {
		return body
	}
	c := make([]byte, 0, len(body))
	c = append(c, body[:off]...)
	c = append(c, body[off+n:]...)
	return append(c, body[off:off+n]...)
}

// Cost is the input of a session's calls, or of several sessions', with
// prompt caching: tokens sent (Input), the cached part of them, what they
// bill at the cache price in uncached-token equivalents, and the cached
// share of the input. Ratio is Billed over native mode's Billed on the same
// sessions (set over sessions; null in a single session's Cost).
type Cost struct {
	Calls       int      `json:"calls"`
	Input       int      `json:"input_tokens"`
	Cached      int      `json:"cached_tokens"`
	Billed      stat.Num `json:"billed_tokens"`
	CachedShare stat.Num `json:"cached_share"`
	Ratio       stat.Num `json:"billed_vs_native"`
}

// costOf adds up calls at price (cached tokens cost price x an uncached one).
func costOf(calls []CallCost, price float64) Cost {
	var c Cost
	for _, cc := range calls {
		c.add(Cost{Calls: 1, Input: cc.Cached + cc.Rest, Cached: cc.Cached})
	}
	c.finish(price)
	return c
}

func (c *Cost) add(o Cost) {
	c.Calls += o.Calls
	c.Input += o.Input
	c.Cached += o.Cached
}

func (c *Cost) finish(price float64) {
	c.Billed = stat.Num(float64(c.Input-c.Cached) + price*float64(c.Cached))
	c.CachedShare, c.Ratio = stat.Num(nan()), stat.Num(nan())
	if c.Input > 0 {
		c.CachedShare = stat.Num(float64(c.Cached) / float64(c.Input))
	}
}

// costsOf sums the sessions' costs of one schedule.
func costsOf(rs []*SessionResult, get func(*SessionResult) Cost, price float64) Cost {
	var c Cost
	for _, r := range rs {
		c.add(get(r))
	}
	c.finish(price)
	return c
}

// scheduleCost is the cost of one schedule's calls, every task's.
func scheduleCost(calls []callObs, price float64) Cost {
	cs := make([]CallCost, len(calls))
	for i, o := range calls {
		cs[i] = o.cost
	}
	return costOf(cs, price)
}

// setCosts sums each schedule's cost over the summary's sessions (all,
// near, far).
func (s *Summary) setCosts(all, near, far []*SessionResult, price float64) {
	for _, m := range []struct {
		m  *Metrics
		rs []*SessionResult
	}{{&s.Metrics, all}, {&s.Near, near}, {&s.Far, far}} {
		m.m.CostBase = costsOf(m.rs, func(r *SessionResult) Cost { return r.CostBase }, price)
		m.m.CostSwitch = costsOf(m.rs, func(r *SessionResult) Cost { return r.CostSwitch }, price)
	}
}

// costRatios sets each summary's billed tokens over native mode's at the
// same threshold (native runs once and appears in every threshold's row).
func costRatios(ss []Summary) {
	native := map[float64]*Summary{}
	for i := range ss {
		if ss[i].Mode == spec.ModeNative {
			native[ss[i].Threshold] = &ss[i]
		}
	}
	ratio := func(c *Cost, n Cost) {
		if n.Billed > 0 {
			c.Ratio = c.Billed / n.Billed
		}
	}
	for i := range ss {
		n := native[ss[i].Threshold]
		if n == nil {
			continue
		}
		s := &ss[i]
		ratio(&s.CostBase, n.CostBase)
		ratio(&s.CostSwitch, n.CostSwitch)
		ratio(&s.Near.CostBase, n.Near.CostBase)
		ratio(&s.Near.CostSwitch, n.Near.CostSwitch)
		ratio(&s.Far.CostBase, n.Far.CostBase)
		ratio(&s.Far.CostSwitch, n.Far.CostSwitch)
	}
}

// costHeader and costRow are the columns of the cost table, the same in
// the terminal summary and report.md.
var costHeader = []string{"mode", "threshold:", "S_base billed:", "vs native:", "cached:", "S_switch billed:", "vs native:", "cached:"}

func costRow(s Summary) []string {
	b, sw := s.CostBase, s.CostSwitch
	return []string{s.Mode, fmt.Sprintf("%.2f", s.Threshold), stat.Format(b.Billed, 0), stat.F3(b.Ratio), stat.F3(b.CachedShare),
		stat.Format(sw.Billed, 0), stat.F3(sw.Ratio), stat.F3(sw.CachedShare)}
}

// writeCostTable prints the cost with prompt caching, one row per mode and
// threshold, as aligned text or (md) a Markdown table.
func (r *Results) writeCostTable(w io.Writer, md bool) {
	if md {
		stat.MdHeader(w, costHeader...)
		for _, s := range r.Summaries {
			fmt.Fprintf(w, "| %s |\n", strings.Join(costRow(s), " | "))
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	names := make([]string, len(costHeader))
	for i, h := range costHeader {
		names[i] = strings.TrimSuffix(h, ":")
	}
	fmt.Fprintf(tw, "%s\t\n", strings.Join(names, "\t"))
	for _, s := range r.Summaries {
		fmt.Fprintf(tw, "%s\t\n", strings.Join(costRow(s), "\t"))
	}
	tw.Flush()
}
