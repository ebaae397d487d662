package replay

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/bench/stat"
)

// SessionResult is what one session showed in one mode at one threshold.
// Call-level values are means over the session's calls: recall,
// contamination and tokens over the focus calls of S_switch (the _base
// fields: over S_base's calls, the same focus calls without switches);
// routing, fallback and prefix stability over every call of S_switch.
type SessionResult struct {
	Session   string  `json:"session"`
	Kind      string  `json:"kind"`
	Mode      string  `json:"mode"`
	Threshold float64 `json:"threshold"`
	Calls     int     `json:"calls"`       // of S_switch
	FocusCall int     `json:"focus_calls"` // of S_switch, = calls of S_base

	FocusRecall       stat.Num `json:"focus_recall"`
	FocusRecallBase   stat.Num `json:"focus_recall_base"`
	Contamination     stat.Num `json:"contamination"`
	ContaminationBase stat.Num `json:"contamination_base"`
	TokensRatio       stat.Num `json:"tokens_ratio"`
	TokensVsBase      stat.Num `json:"tokens_vs_base"`
	ForwardedTokens   stat.Num `json:"forwarded_tokens"`
	RoutingAccuracy   stat.Num `json:"routing_accuracy"`
	Routed            stat.Num `json:"routed"`
	FallbackRate      stat.Num `json:"fallback_rate"`
	FallbackThreshold stat.Num `json:"fallback_threshold"`
	FallbackError     stat.Num `json:"fallback_error"`
	PrefixStability   stat.Num `json:"prefix_stability"`
	// FalseSwitches: on S_base (one task), the routed calls sent to
	// another task than the first routed call's.
	FalseSwitches FalseSwitches `json:"false_switches"`
	// PostSwitch: the same focus-call means over the post-switch calls only.
	PostSwitch PostSwitch `json:"post_switch"`
	// CompactionCoverage: of the compaction call ending S_switch, as the
	// upstream received it, the share of the session's unfinished tasks
	// whose every request it holds verbatim; CompactionSections: 1 when it
	// asks for one section per task, else 0.
	CompactionCoverage stat.Num `json:"compaction_coverage"`
	CompactionSections stat.Num `json:"compaction_sections"`
	// RecordBytes: the focus task's state record after each of its turns
	// (rcm mode; null values otherwise).
	RecordBytes RecordBytes `json:"record_bytes"`
	// CostBase and CostSwitch: input tokens of every call of S_base and of
	// S_switch (every task's calls) with prompt caching (see Cost).
	CostBase   Cost `json:"cost_base"`
	CostSwitch Cost `json:"cost_switch"`

	// Classifier: the router's model classifier over both schedules.
	Classifier Classifier `json:"classifier"`

	decisions []Decision
	overhead  []float64 // ms, every call of both schedules
}

// Classifier is what the router's model classifier (--router-model) cost,
// summed from the X-RCM-Router-Calls header of every replayed call: its
// calls, failed ones, tokens and time.
type Classifier struct {
	Calls            int      `json:"calls"`
	Errors           int      `json:"errors"`
	PromptTokens     int      `json:"prompt_tokens"`
	CompletionTokens int      `json:"completion_tokens"`
	Ms               stat.Num `json:"ms"`
	MsPerCall        stat.Num `json:"ms_per_call"` // null without calls
}

// parseClassifier reads X-RCM-Router-Calls ("calls errors prompt
// completion ms"); an absent or malformed header is no classifier call.
func parseClassifier(h string) Classifier {
	c := Classifier{MsPerCall: stat.Num(math.NaN())}
	f := strings.Fields(h)
	if len(f) != 5 {
		return c
	}
	var n [4]int
	for i := range n {
		v, err := strconv.Atoi(f[i])
		if err != nil || v < 0 {
			return c
		}
		n[i] = v
	}
	ms, err := strconv.ParseFloat(f[4], 64)
	if err != nil || !(ms >= 0) {
		return c
	}
	c.Calls, c.Errors, c.PromptTokens, c.CompletionTokens, c.Ms = n[0], n[1], n[2], n[3], stat.Num(ms)
	c.perCall()
	return c
}

func (c *Classifier) add(o Classifier) {
	c.Calls += o.Calls
	c.Errors += o.Errors
	c.PromptTokens += o.PromptTokens
	c.CompletionTokens += o.CompletionTokens
	c.Ms += o.Ms
	c.perCall()
}

func (c *Classifier) perCall() {
	c.MsPerCall = stat.Num(math.NaN())
	if c.Calls > 0 {
		c.MsPerCall = c.Ms / stat.Num(c.Calls)
	}
}

// classifierOf sums sessions' classifier costs.
func classifierOf(rs []*SessionResult) Classifier {
	c := Classifier{MsPerCall: stat.Num(math.NaN())}
	for _, r := range rs {
		c.add(r.Classifier)
	}
	return c
}

// PostSwitch is a session's focus calls of S_switch that come after
// another task's turn (every focus stage but the first in S_switch): the
// calls where the other tasks' turns sit in the harness's history, so where
// routing can drop them. A_1's calls have nothing to drop.
type PostSwitch struct {
	FocusCalls    int      `json:"focus_calls"`
	FocusRecall   stat.Num `json:"focus_recall"`
	Contamination stat.Num `json:"contamination"`
	TokensRatio   stat.Num `json:"tokens_ratio"`
	TokensVsBase  stat.Num `json:"tokens_vs_base"`
}

// RecordBytes is how a task's state record grows: the bytes of its
// rendered text after each focus turn of S_switch, as the proxy's inspector
// shows it. Over sessions: the mean of the sessions' means, the largest
// record, the mean slope, and the mean per focus turn (ByTurn).
type RecordBytes struct {
	Mean    stat.Num   `json:"mean"`
	Max     stat.Num   `json:"max"`
	PerTurn stat.Num   `json:"per_turn"` // least-squares slope, bytes per focus turn
	ByTurn  []stat.Num `json:"by_turn,omitempty"`
}

func recordBytes(turns []float64) RecordBytes {
	rb := RecordBytes{Mean: stat.Mean(turns), Max: stat.Num(math.NaN()), PerTurn: stat.Num(slopeOf(turns))}
	if len(turns) > 0 {
		rb.Max = stat.Num(slices.Max(turns))
	}
	for _, b := range turns {
		rb.ByTurn = append(rb.ByTurn, stat.Num(b))
	}
	return rb
}

// focusMeans are the means of the focus-call values.
type focusMeans struct {
	recall, contam, ratio, vsBase []float64
}

func (f *focusMeans) add(o callObs, base []callObs, k int) {
	f.recall = append(f.recall, o.recall)
	f.contam = append(f.contam, o.contamination)
	f.ratio = append(f.ratio, float64(o.fwd)/float64(o.sent))
	if k < len(base) {
		f.vsBase = append(f.vsBase, float64(o.fwd)/float64(base[k].fwd))
	}
}

// sessionResult condenses both schedules' calls of one session.
func sessionResult(sess *benchspec.Session, mode string, threshold float64, base, sw []callObs, end *endObs) *SessionResult {
	r := &SessionResult{Session: sess.ID, Kind: sess.Kind, Mode: mode, Threshold: threshold, Calls: len(sw),
		CompactionCoverage: stat.Num(end.coverage), CompactionSections: stat.Num(end.sections), RecordBytes: recordBytes(end.recordBytes)}
	var all, post focusMeans
	var toks, recallB, contamB []float64
	k := 0
	for _, o := range sw {
		if !o.focus {
			continue
		}
		all.add(o, base, k)
		if o.postSwitch {
			post.add(o, base, k)
		}
		toks = append(toks, float64(tokensOf(o.fwd)))
		k++
	}
	r.FocusCall = k
	for _, o := range base {
		recallB = append(recallB, o.recall)
		contamB = append(contamB, o.contamination)
	}
	r.FocusRecall, r.Contamination, r.TokensRatio = stat.Mean(all.recall), stat.Mean(all.contam), stat.Mean(all.ratio)
	r.TokensVsBase, r.ForwardedTokens = stat.Mean(all.vsBase), stat.Mean(toks)
	r.FocusRecallBase, r.ContaminationBase = stat.Mean(recallB), stat.Mean(contamB)
	routedB := make([]string, len(base))
	for i, o := range base {
		if o.fallback == "" || o.fallback == "none" {
			routedB[i] = o.task
		}
	}
	r.FalseSwitches = countFalseSwitches(routedB)
	r.PostSwitch = PostSwitch{FocusCalls: len(post.recall), FocusRecall: stat.Mean(post.recall), Contamination: stat.Mean(post.contam),
		TokensRatio: stat.Mean(post.ratio), TokensVsBase: stat.Mean(post.vsBase)}

	got, truth, routedAt := make([]string, len(sw)), make([]string, len(sw)), make([]bool, len(sw))
	var fbT, fbE, routed float64
	var prefix []float64
	for i, o := range sw {
		got[i], truth[i], routedAt[i] = o.task, o.truth, o.routed()
		switch o.fallback {
		case "threshold":
			fbT++
		case "error":
			fbE++
		}
		if o.task != "" {
			routed++
		}
		if !math.IsNaN(o.prefix) {
			prefix = append(prefix, o.prefix)
		}
	}
	n := float64(len(sw))
	r.FallbackThreshold, r.FallbackError, r.FallbackRate = stat.Num(fbT/n), stat.Num(fbE/n), stat.Num((fbT+fbE)/n)
	r.Routed, r.PrefixStability = stat.Num(routed/n), stat.Mean(prefix)
	r.RoutingAccuracy = stat.Num(math.NaN())
	if routed > 0 {
		m := mapTasks(got, truth, routedAt)
		correct := 0
		for i, o := range sw {
			if o.task == "" {
				continue
			}
			ok := m[o.task] == truth[i]
			if ok {
				correct++
			}
			r.decisions = append(r.decisions, Decision{Confidence: o.confidence, Correct: ok, Routed: o.routed()})
		}
		// Calls without a decision count as misrouted.
		r.RoutingAccuracy = stat.Num(float64(correct) / n)
	}
	r.Classifier.perCall()
	for _, o := range slices.Concat(base, sw) {
		r.Classifier.add(o.classifier)
		if !math.IsNaN(o.overhead) {
			r.overhead = append(r.overhead, o.overhead)
		}
	}
	return r
}

// Metrics are a mode's and threshold's results over a set of sessions: the
// mean over sessions of each session's value with its 95% t-interval (_ci),
// the calibration of the pooled routing decisions, and percentiles of the
// pooled per-call overhead.
type Metrics struct {
	N                 int         `json:"n"` // sessions
	FocusRecall       stat.Num    `json:"focus_recall"`
	FocusRecallCI     [2]stat.Num `json:"focus_recall_ci"`
	FocusRecallBase   stat.Num    `json:"focus_recall_base"`
	Contamination     stat.Num    `json:"contamination"`
	ContaminationCI   [2]stat.Num `json:"contamination_ci"`
	TokensRatio       stat.Num    `json:"tokens_ratio"`
	TokensRatioCI     [2]stat.Num `json:"tokens_ratio_ci"`
	TokensVsBase      stat.Num    `json:"tokens_vs_base"`
	ForwardedTokens   stat.Num    `json:"forwarded_tokens"`
	RoutingAccuracy   stat.Num    `json:"routing_accuracy"`
	RoutingAccuracyCI [2]stat.Num `json:"routing_accuracy_ci"`
	Routed            stat.Num    `json:"routed"`
	ECE               stat.Num    `json:"ece"`
	Calibration       []Bin       `json:"calibration"`
	// RoutedRight: the share of routed decisions (pooled; fallbacks left
	// out) that were right, over RoutedN of them.
	RoutedRight       stat.Num    `json:"routed_right"`
	RoutedN           int         `json:"routed_n"`
	FallbackRate      stat.Num    `json:"fallback_rate"`
	FallbackRateCI    [2]stat.Num `json:"fallback_rate_ci"`
	FallbackThreshold stat.Num    `json:"fallback_threshold"`
	FallbackError     stat.Num    `json:"fallback_error"`
	PrefixStability   stat.Num    `json:"prefix_stability"`
	PrefixStabilityCI [2]stat.Num `json:"prefix_stability_ci"`
	OverheadP50       stat.Num    `json:"overhead_ms_p50"`
	OverheadP95       stat.Num    `json:"overhead_ms_p95"`
	// FalseSwitches: pooled over sessions (see SessionResult).
	FalseSwitches FalseSwitches `json:"false_switches"`
	// Classifier: summed over sessions (see SessionResult).
	Classifier Classifier `json:"classifier"`
	// PostSwitch: recall, contamination and tokens over the post-switch
	// focus calls only (see PostSwitch), over the sessions that have some.
	PostSwitch           PostSwitchMetrics `json:"post_switch"`
	CompactionCoverage   stat.Num          `json:"compaction_coverage"`
	CompactionCoverageCI [2]stat.Num       `json:"compaction_coverage_ci"`
	CompactionSections   stat.Num          `json:"compaction_sections"`
	RecordBytes          RecordBytes       `json:"record_bytes"`
	// CostBase and CostSwitch: the sessions' costs with prompt caching
	// summed per schedule, with the ratio of billed tokens to native's.
	CostBase   Cost `json:"cost_base"`
	CostSwitch Cost `json:"cost_switch"`
}

// PostSwitchMetrics are PostSwitch's values over sessions: the mean over
// sessions with its 95% t-interval (_ci).
type PostSwitchMetrics struct {
	N               int         `json:"n"` // sessions with post-switch focus calls
	FocusRecall     stat.Num    `json:"focus_recall"`
	FocusRecallCI   [2]stat.Num `json:"focus_recall_ci"`
	Contamination   stat.Num    `json:"contamination"`
	ContaminationCI [2]stat.Num `json:"contamination_ci"`
	TokensRatio     stat.Num    `json:"tokens_ratio"`
	TokensRatioCI   [2]stat.Num `json:"tokens_ratio_ci"`
	TokensVsBase    stat.Num    `json:"tokens_vs_base"`
}

// Summary is one row of results.json: a mode at a threshold, over all
// sessions and split by near and far sessions.
type Summary struct {
	Mode      string  `json:"mode"`
	Threshold float64 `json:"threshold"`
	Metrics
	Near Metrics `json:"near"`
	Far  Metrics `json:"far"`
}

// Results are a replay's outcome, what results.json holds.
type Results struct {
	Spec       string    `json:"spec"`
	Layout     string    `json:"layout,omitempty"`
	Modes      []string  `json:"modes"`
	Thresholds []float64 `json:"thresholds"`
	// Sessions in the spec; Completed: those every mode and threshold
	// finished, the ones the results are over.
	Sessions    int              `json:"sessions"`
	Completed   int              `json:"completed_sessions"`
	Interrupted bool             `json:"interrupted"`
	Errors      []string         `json:"errors,omitempty"`
	CachePrice  float64          `json:"cache_price"` // of the costs (see Cost)
	Summaries   []Summary        `json:"results"`
	PerSession  []*SessionResult `json:"per_session"`
}

func aggregate(spec *benchspec.Spec, opts Options, rs []*SessionResult) *Results {
	res := &Results{Spec: spec.Name, Layout: spec.Layout, Modes: opts.Modes, Thresholds: opts.Thresholds, Sessions: len(spec.Sessions), PerSession: rs,
		CachePrice: opts.CachePrice}
	seen := map[string]bool{}
	for _, r := range rs {
		seen[r.Session] = true
	}
	res.Completed = len(seen)
	slices.SortStableFunc(rs, func(a, b *SessionResult) int {
		return cmp.Or(cmp.Compare(slices.Index(opts.Modes, a.Mode), slices.Index(opts.Modes, b.Mode)),
			cmp.Compare(a.Threshold, b.Threshold))
	})
	for _, m := range opts.Modes {
		for _, t := range opts.Thresholds {
			var all, near, far []*SessionResult
			for _, r := range rs {
				if r.Mode != m || r.Threshold != t {
					continue
				}
				all = append(all, r)
				if r.Kind == benchspec.KindNear {
					near = append(near, r)
				} else {
					far = append(far, r)
				}
			}
			s := Summary{
				Mode: m, Threshold: t, Metrics: metricsOf(all), Near: metricsOf(near), Far: metricsOf(far),
			}
			s.setCosts(all, near, far, opts.CachePrice)
			res.Summaries = append(res.Summaries, s)
		}
	}
	costRatios(res.Summaries)
	return res
}

func metricsOf(rs []*SessionResult) Metrics {
	ci := func(get func(*SessionResult) stat.Num) (stat.Num, [2]stat.Num) {
		var xs []float64
		for _, r := range rs {
			if v := float64(get(r)); !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
		m, lo, hi := stat.MeanCI(xs)
		return stat.Num(m), [2]stat.Num{stat.Num(lo), stat.Num(hi)}
	}
	var m Metrics
	m.N = len(rs)
	m.FocusRecall, m.FocusRecallCI = ci(func(r *SessionResult) stat.Num { return r.FocusRecall })
	m.FocusRecallBase, _ = ci(func(r *SessionResult) stat.Num { return r.FocusRecallBase })
	m.Contamination, m.ContaminationCI = ci(func(r *SessionResult) stat.Num { return r.Contamination })
	m.TokensRatio, m.TokensRatioCI = ci(func(r *SessionResult) stat.Num { return r.TokensRatio })
	m.TokensVsBase, _ = ci(func(r *SessionResult) stat.Num { return r.TokensVsBase })
	m.ForwardedTokens, _ = ci(func(r *SessionResult) stat.Num { return r.ForwardedTokens })
	m.RoutingAccuracy, m.RoutingAccuracyCI = ci(func(r *SessionResult) stat.Num { return r.RoutingAccuracy })
	m.Routed, _ = ci(func(r *SessionResult) stat.Num { return r.Routed })
	m.FallbackRate, m.FallbackRateCI = ci(func(r *SessionResult) stat.Num { return r.FallbackRate })
	m.FallbackThreshold, _ = ci(func(r *SessionResult) stat.Num { return r.FallbackThreshold })
	m.FallbackError, _ = ci(func(r *SessionResult) stat.Num { return r.FallbackError })
	m.PrefixStability, m.PrefixStabilityCI = ci(func(r *SessionResult) stat.Num { return r.PrefixStability })
	m.FalseSwitches = falseSwitchesOf(rs)
	m.Classifier = classifierOf(rs)
	p := &m.PostSwitch
	for _, r := range rs {
		if r.PostSwitch.FocusCalls > 0 {
			p.N++
		}
	}
	p.FocusRecall, p.FocusRecallCI = ci(func(r *SessionResult) stat.Num { return r.PostSwitch.FocusRecall })
	p.Contamination, p.ContaminationCI = ci(func(r *SessionResult) stat.Num { return r.PostSwitch.Contamination })
	p.TokensRatio, p.TokensRatioCI = ci(func(r *SessionResult) stat.Num { return r.PostSwitch.TokensRatio })
	p.TokensVsBase, _ = ci(func(r *SessionResult) stat.Num { return r.PostSwitch.TokensVsBase })
	m.CompactionCoverage, m.CompactionCoverageCI = ci(func(r *SessionResult) stat.Num { return r.CompactionCoverage })
	m.CompactionSections, _ = ci(func(r *SessionResult) stat.Num { return r.CompactionSections })
	m.RecordBytes = recordBytesOf(rs)
	var ds []Decision
	var over []float64
	for _, r := range rs {
		ds = append(ds, r.decisions...)
		over = append(over, r.overhead...)
	}
	var ece float64
	m.Calibration, ece = calibrate(ds, 10)
	m.ECE = stat.Num(ece)
	rr, rn := routedRight(ds)
	m.RoutedRight, m.RoutedN = stat.Num(rr), rn
	m.OverheadP50, m.OverheadP95 = stat.Num(stat.Percentile(over, 50)), stat.Num(stat.Percentile(over, 95))
	return m
}

// recordBytesOf condenses the sessions' record growth (see RecordBytes).
func recordBytesOf(rs []*SessionResult) RecordBytes {
	var means, slopes []float64
	var byTurn [][]float64
	top := math.NaN()
	for _, r := range rs {
		rb := r.RecordBytes
		if math.IsNaN(float64(rb.Mean)) {
			continue
		}
		means = append(means, float64(rb.Mean))
		if !math.IsNaN(float64(rb.PerTurn)) {
			slopes = append(slopes, float64(rb.PerTurn))
		}
		if math.IsNaN(top) || float64(rb.Max) > top {
			top = float64(rb.Max)
		}
		for i, b := range rb.ByTurn {
			if i == len(byTurn) {
				byTurn = append(byTurn, nil)
			}
			byTurn[i] = append(byTurn[i], float64(b))
		}
	}
	out := RecordBytes{Mean: stat.Mean(means), Max: stat.Num(top), PerTurn: stat.Mean(slopes)}
	for _, xs := range byTurn {
		out.ByTurn = append(out.ByTurn, stat.Mean(xs))
	}
	return out
}
