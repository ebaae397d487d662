package replay

import (
	"cmp"
	"slices"
	"strings"

	"github.com/rcm-dev/rcm/bench/chatlog"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/bench/stat"
	"github.com/rcm-dev/rcm/bench/trajectory"
)

// LogMetrics measure a replay of labelled real sessions over one set of
// calls: those at a new request (each turn's first call, whose history
// ends with its user message) or every model call. Counts are pooled over
// the sessions; shares are of the pooled counts, NaN (null) without any.
// Router ids (t1, t2) are never compared with gold ids (T1): a call is
// "right" when it gets the router id the same gold task's previous
// request got (the label of that turn's last call).
type LogMetrics struct {
	Calls  int `json:"calls"`
	Routed int `json:"routed"` // a decision and no fallback
	// NeededLost: the share of calls whose forwarded messages lack the
	// verbatim text of an earlier user message of a task in the request's
	// needs, of those the call sent (none before a compaction's summary;
	// meta messages are never needed: they ask the model nothing);
	// NeededLostRouted: the same share of the routed calls.
	NeededLost       stat.Num `json:"needed_lost"`
	NeededLostRouted stat.Num `json:"needed_lost_routed"`
	// SplitOff: among the ContinueRouted routed calls of continue
	// requests, the share sent to another router id than the same gold
	// task's previous request.
	SplitOff       stat.Num `json:"continue_split_off"`
	ContinueRouted int      `json:"continue_routed"`
	// Returns: the calls of return requests routed to the returning task's
	// previous router id, routed elsewhere, or fallen back.
	ReturnsRight    int `json:"returns_right"`
	ReturnsWrong    int `json:"returns_wrong"`
	ReturnsFallback int `json:"returns_fallback"`
	// NewDetected of NewTasks calls of new requests (a session's first
	// task left out: nothing to tell it from) were routed to a router id no
	// earlier request had.
	NewDetected int `json:"new_detected"`
	NewTasks    int `json:"new_tasks"`
	// UnneededDropped: on routed calls, the share of the bytes of earlier
	// turns of tasks neither the request's own nor in its needs that was
	// left out (bytes pooled over the calls).
	UnneededDropped stat.Num `json:"unneeded_dropped"`
	FallbackRate    stat.Num `json:"fallback_rate"`
	// BytesRatio: body bytes forwarded over body bytes sent.
	BytesRatio stat.Num `json:"bytes_ratio"`
}

// logCounts are LogMetrics' numerators and denominators.
type logCounts struct {
	calls, routed, lost, lostRouted, fallbacks         int
	contRouted, split, retRight, retWrong, retFallback int
	newDetected, newTasks                              int
	unneeded, dropped, sent, fwd                       int
}

func (c *logCounts) add(o logCounts) {
	c.calls += o.calls
	c.routed += o.routed
	c.lost += o.lost
	c.lostRouted += o.lostRouted
	c.fallbacks += o.fallbacks
	c.contRouted += o.contRouted
	c.split += o.split
	c.retRight += o.retRight
	c.retWrong += o.retWrong
	c.retFallback += o.retFallback
	c.newDetected += o.newDetected
	c.newTasks += o.newTasks
	c.unneeded += o.unneeded
	c.dropped += o.dropped
	c.sent += o.sent
	c.fwd += o.fwd
}

func share(n, d int) stat.Num {
	if d == 0 {
		return stat.Num(nan())
	}
	return stat.Num(float64(n) / float64(d))
}

func (c logCounts) metrics() LogMetrics {
	return LogMetrics{
		Calls: c.calls, Routed: c.routed,
		NeededLost: share(c.lost, c.calls), NeededLostRouted: share(c.lostRouted, c.routed),
		SplitOff: share(c.split, c.contRouted), ContinueRouted: c.contRouted,
		ReturnsRight: c.retRight, ReturnsWrong: c.retWrong, ReturnsFallback: c.retFallback,
		NewDetected: c.newDetected, NewTasks: c.newTasks,
		UnneededDropped: share(c.dropped, c.unneeded), FallbackRate: share(c.fallbacks, c.calls),
		BytesRatio: share(c.fwd, c.sent),
	}
}

// kept reports, per message of the whole history up to call k's end,
// whether the proxy forwarded it: a forwarded message with its key, each
// forwarded message standing for one message the call sent (the earliest
// not yet matched). Messages the call did not send (before a compaction)
// are not kept.
func (p *logPlan) kept(k int, o *logObs) []bool {
	left := make(map[string]int, len(o.present))
	for key, n := range o.present {
		left[key] = n
	}
	out := make([]bool, p.end(k))
	for h := range out {
		if p.sent(k, h) && left[p.keys[h]] > 0 {
			left[p.keys[h]]--
			out[h] = true
		}
	}
	return out
}

// measure returns a labelled unit's counts over the calls at a new request
// and over all calls, and its decisions for calibration. A decision is
// correct when it was safe, which is what the router's confidence
// estimates (router/score.go's heads): its task is the one the same gold
// task's previous request got (a task no earlier turn has, for a gold
// task's first request), and no needed request is left out.
func (p *logPlan) measure(obs []logObs) (req, all logCounts, ds []Decision) {
	labels := p.sess.Labels
	last := map[int]string{} // turn -> router id of its last call
	for _, o := range obs {
		last[o.turn] = o.task
	}
	firstNew := slices.IndexFunc(labels, func(l chatlog.Label) bool { return l.Kind == chatlog.KindNew })
	earlier, current := map[string]bool{}, map[string]bool{} // router ids of earlier turns, of this one
	turn := -1
	for k := range obs {
		o := &obs[k]
		if o.turn != turn {
			for id := range current {
				earlier[id] = true
			}
			clear(current)
			turn = o.turn
		}
		current[o.task] = true
		l := labels[o.turn]
		c := logCounts{calls: 1, sent: o.sent, fwd: o.fwd}
		routed, decided := o.routed(), o.task != "" || o.fellBack()
		if routed {
			c.routed = 1
		}
		if o.fellBack() {
			c.fallbacks = 1
		}
		lost := p.lost(k, o)
		if lost {
			c.lost, c.lostRouted = 1, c.routed
		}
		prev := -1 // the same gold task's previous request
		for j := o.turn - 1; j >= 0; j-- {
			if labels[j].Kind != chatlog.KindMeta && labels[j].Task == l.Task {
				prev = j
				break
			}
		}
		switch {
		case l.Kind == chatlog.KindContinue && routed && prev >= 0 && last[prev] != "":
			c.contRouted = 1
			if o.task != last[prev] {
				c.split = 1
			}
		case l.Kind == chatlog.KindReturn && o.fellBack():
			c.retFallback = 1
		case l.Kind == chatlog.KindReturn && routed && prev >= 0:
			if o.task == last[prev] {
				c.retRight = 1
			} else {
				c.retWrong = 1
			}
		case l.Kind == chatlog.KindNew && o.turn != firstNew && decided:
			c.newTasks = 1
			if routed && !earlier[o.task] {
				c.newDetected = 1
			}
		}
		if routed {
			kept := p.kept(k, o)
			for h, in := range kept {
				t := p.turn[h]
				if t < 0 || !p.sent(k, h) || t >= o.turn || labels[t].Task == l.Task || slices.Contains(l.Needs, labels[t].Task) {
					continue
				}
				c.unneeded += len(p.messages[h])
				if !in {
					c.dropped += len(p.messages[h])
				}
			}
		}
		all.add(c)
		if o.first {
			req.add(c)
		}
		if o.task != "" {
			right := !earlier[o.task]
			if prev >= 0 {
				right = o.task == last[prev]
			}
			ds = append(ds, Decision{Confidence: o.conf, Correct: right && !lost, Routed: routed})
		}
	}
	return req, all, ds
}

// lost reports whether call k's forwarded user messages lack the text of
// an earlier, non-meta request of a task the call's request needs, of
// those the call sent (a compaction's harness sent none before it).
func (p *logPlan) lost(k int, o *logObs) bool {
	l := p.sess.Labels[o.turn]
	for j := range o.turn {
		lj := p.sess.Labels[j]
		text := strings.TrimSpace(p.sess.Turns[j].Request)
		if lj.Kind == chatlog.KindMeta || text == "" || !slices.Contains(l.Needs, lj.Task) {
			continue
		}
		if _, sent := p.sentRequest(k, j); !sent {
			continue
		}
		if !slices.ContainsFunc(o.texts, func(t string) bool { return strings.Contains(t, text) }) {
			return true
		}
	}
	return false
}

// LogSummary is one mode and threshold of a replay of real sessions:
// LogMetrics over the labelled sessions at a new request and over all
// calls, and the calibration of every decision (over all calls).
type LogSummary struct {
	Mode      string     `json:"mode"`
	Threshold float64    `json:"threshold"`
	Sessions  int        `json:"sessions"` // labelled sessions measured
	AtRequest LogMetrics `json:"at_request"`
	All       LogMetrics `json:"all_calls"`
	ECE       stat.Num   `json:"ece"`
	Bins      []Bin      `json:"calibration"`
}

// AuditRow is what the proxy did at one request of a session: the
// decision of the request's first call, and which earlier requests that
// call's forwarded messages left out.
type AuditRow struct {
	Turn       int     `json:"turn"`           // counts from 1
	Request    string  `json:"request"`        // its first 60 characters
	Gold       string  `json:"gold,omitempty"` // the label's task and kind ("T2 new")
	Task       string  `json:"task"`
	Confidence float64 `json:"confidence"`
	Method     string  `json:"method"`
	Fallback   string  `json:"fallback"`
	Dropped    []int   `json:"dropped"` // earlier turns whose request was not forwarded
	// NeededLost: a request it needs (by its label) was not forwarded.
	NeededLost bool `json:"needed_lost,omitempty"`
	// Over all the request's calls, the first included: how many there
	// were, the decision of the last one, the earlier turns any of them
	// left out and whether any of them lost a needed request. A request
	// that fell back at its first call may be routed at a later one.
	Calls      int    `json:"calls"`
	Last       Choice `json:"last"`
	DroppedAny []int  `json:"dropped_any"`
	LostAny    bool   `json:"needed_lost_any,omitempty"`
}

// Choice is one call's decision: its task, confidence and fallback.
type Choice struct {
	Task       string  `json:"task"`
	Confidence float64 `json:"confidence"`
	Fallback   string  `json:"fallback"`
}

// Audit lists one session's requests in one mode and threshold.
type Audit struct {
	Session   string     `json:"session"`
	Path      string     `json:"path"` // the log file`
	Mode      string     `json:"mode"`
	Threshold float64    `json:"threshold"`
	Requests  []AuditRow `json:"requests"`
}

// LogResults are what a replay of real sessions showed (see Logs).
type LogResults struct {
	API       string       `json:"api"`
	Sessions  int          `json:"sessions"`  // replayed
	Labelled  int          `json:"labelled"`  // of them, with labels
	Completed int          `json:"completed"` // sessions whose every unit finished
	Summaries []LogSummary `json:"summaries"` // labelled sessions only; one per mode and threshold
	// Audit: every session (labelled or not) in every mode but native.
	Audit       []Audit  `json:"audit"`
	Interrupted bool     `json:"interrupted,omitempty"`
	Errors      []string `json:"errors,omitempty"`
	// Skipped: what reading the logs left out or repaired (chatlog.Read's
	// skips: a log it could not parse, labels that disagree with their
	// log, lines that are not JSON, and in a Claude Code or Codex log an
	// entry it could not place or a tool call it had to close), set by the
	// caller that read them.
	Skipped []trajectory.Skip `json:"skipped,omitempty"`
}

// audit lists a unit's requests.
func (p *logPlan) audit(u unit, obs []logObs) Audit {
	a := Audit{Session: p.sess.Name, Path: p.sess.Path, Mode: u.mode, Threshold: u.threshold}
	for k := range obs {
		o := &obs[k]
		var dropped []int
		kept := p.kept(k, o)
		for j := range o.turn {
			if h, sent := p.sentRequest(k, j); sent && !kept[h] {
				dropped = append(dropped, j+1)
			}
		}
		lost := p.sess.Labels != nil && p.lost(k, o)
		if len(a.Requests) == 0 || a.Requests[len(a.Requests)-1].Turn != o.turn+1 {
			row := AuditRow{Turn: o.turn + 1, Request: chatlog.Prefix(p.sess.Turns[o.turn].Request),
				Task: o.task, Confidence: o.conf, Method: o.method, Fallback: o.fallback, Dropped: append([]int{}, dropped...), DroppedAny: []int{}}
			if p.sess.Labels != nil {
				l := p.sess.Labels[o.turn]
				row.Gold, row.NeededLost = l.Task+" "+l.Kind, lost
			}
			a.Requests = append(a.Requests, row)
		}
		row := &a.Requests[len(a.Requests)-1]
		row.Calls++
		row.Last = Choice{Task: o.task, Confidence: o.conf, Fallback: o.fallback}
		for _, j := range dropped {
			if !slices.Contains(row.DroppedAny, j) {
				row.DroppedAny = append(row.DroppedAny, j)
			}
		}
		row.LostAny = row.LostAny || lost
	}
	for i := range a.Requests {
		slices.Sort(a.Requests[i].DroppedAny)
	}
	return a
}

// logResults gathers the units of the sessions that finished every unit;
// a native unit counts for every threshold.
func logResults(plans []*logPlan, units []unit, obs [][]logObs, done []bool, opts Options) *LogResults {
	res := &LogResults{API: opts.API, Sessions: len(plans)}
	type key struct {
		mode string
		th   float64
	}
	req, all := map[key]*logCounts{}, map[key]*logCounts{}
	ds, sessions := map[key][]Decision{}, map[key]int{}
	for i, p := range plans {
		if done[i] {
			res.Completed++
			if p.sess.Labels != nil {
				res.Labelled++
			}
		}
	}
	for i, u := range units {
		p := plans[u.session]
		if !done[u.session] {
			continue
		}
		if u.mode != benchspec.ModeNative {
			res.Audit = append(res.Audit, p.audit(u, obs[i]))
		}
		if p.sess.Labels == nil {
			continue
		}
		r, a, d := p.measure(obs[i])
		ths := []float64{u.threshold}
		if u.mode == benchspec.ModeNative {
			ths = opts.Thresholds
		}
		for _, th := range ths {
			k := key{u.mode, th}
			if req[k] == nil {
				req[k], all[k] = &logCounts{}, &logCounts{}
			}
			req[k].add(r)
			all[k].add(a)
			ds[k] = append(ds[k], d...)
			sessions[k]++
		}
	}
	for k := range req {
		s := LogSummary{Mode: k.mode, Threshold: k.th, Sessions: sessions[k], AtRequest: req[k].metrics(), All: all[k].metrics()}
		var ece float64
		s.Bins, ece = calibrate(ds[k], 10)
		s.ECE = stat.Num(ece)
		res.Summaries = append(res.Summaries, s)
	}
	order := map[string]int{}
	for i, m := range opts.Modes {
		order[m] = i
	}
	slices.SortFunc(res.Summaries, func(a, b LogSummary) int {
		return cmp.Or(cmp.Compare(order[a.Mode], order[b.Mode]), cmp.Compare(a.Threshold, b.Threshold))
	})
	return res
}
