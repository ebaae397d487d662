package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rcm-dev/rcm/bench/progress"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/scripted"
	"github.com/tidwall/gjson"
)

// unit is the work of one session in one mode at one threshold: both
// schedules. Native units have threshold -1 (run once, reported for all).
type unit struct {
	session   int
	mode      string
	threshold float64
}

// unitsOf lists the units of n sessions: native once each, the other
// modes at every threshold.
func unitsOf(n int, opts *Options) []unit {
	var units []unit
	for i := range n {
		for _, m := range opts.Modes {
			if m == benchspec.ModeNative {
				units = append(units, unit{i, m, -1})
				continue
			}
			for _, t := range opts.Thresholds {
				units = append(units, unit{i, m, t})
			}
		}
	}
	return units
}

// header says the unit's mode and threshold to the proxy.
func (u unit) header() http.Header {
	h := http.Header{}
	h.Set("X-RCM-Mode", u.mode)
	if u.threshold >= 0 {
		h.Set("X-RCM-Threshold", strconv.FormatFloat(u.threshold, 'f', -1, 64))
	}
	return h
}

// Replay replays every session of spec through the proxy in each mode and
// threshold, both schedules, and returns the metrics (see Results). When
// ctx ends it stops and returns the results of the sessions that finished
// every unit, with ctx's error.
func Replay(ctx context.Context, spec *benchspec.Spec, opts Options) (*Results, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	plans := make([]*plan, len(spec.Sessions))
	total := 0
	for i := range spec.Sessions {
		p, err := newPlan(spec, &spec.Sessions[i], opts.API)
		if err != nil {
			return nil, err
		}
		plans[i] = p
	}
	units := unitsOf(len(plans), &opts)
	perSession := len(units) / max(len(plans), 1)
	for _, u := range units {
		total += plans[u.session].calls()
	}
	r := &runner{
		spec: spec, opts: opts, plans: plans,
		nonce: strconv.FormatUint(rand.Uint64()&0xffffffff, 36),
		track: progress.NewTracker(total, len(plans), opts.Progress),
		left:  map[int]int{},
	}
	for i := range plans {
		r.left[i] = perSession
	}
	results := make([]*SessionResult, len(units))
	errs := make([]error, len(units))
	progress.Parallel(ctx, opts.Concurrency, len(units), func(i int) {
		results[i], errs[i] = r.unit(ctx, units[i])
		r.finished(units[i])
	})

	// Keep the sessions whose every unit finished, so that every mode and
	// threshold is compared on the same sessions.
	done := map[int]bool{}
	for i := range plans {
		done[i] = true
	}
	var failures []error
	for i, u := range units {
		switch {
		case results[i] == nil && errs[i] == nil:
			done[u.session] = false
		case errs[i] != nil:
			done[u.session] = false
			if ctx.Err() == nil || !errors.Is(errs[i], ctx.Err()) {
				failures = append(failures, errs[i])
			}
		}
	}
	var kept []*SessionResult
	for i, u := range units {
		if !done[u.session] {
			continue
		}
		if u.mode == benchspec.ModeNative {
			for _, t := range opts.Thresholds {
				c := *results[i]
				c.Threshold = t
				kept = append(kept, &c)
			}
			continue
		}
		kept = append(kept, results[i])
	}
	res := aggregate(spec, opts, kept)
	var err error
	res.Interrupted, res.Errors, err = ended(ctx, failures)
	return res, err
}

// ended says how a replay ended: interrupted (ctx ended it), its failures'
// messages for the results, and its error (ctx's, else the failures').
func ended(ctx context.Context, failures []error) (interrupted bool, msgs []string, err error) {
	for _, f := range failures {
		msgs = append(msgs, f.Error())
	}
	if ctx.Err() != nil {
		return true, msgs, ctx.Err()
	}
	return false, msgs, errors.Join(failures...)
}

// runner holds a replay's shared state.
type runner struct {
	spec  *benchspec.Spec
	opts  Options
	plans []*plan
	nonce string
	track *progress.Tracker
	// recordWait, when set, replaces the package's recordWait (tests).
	recordWait time.Duration

	mu   sync.Mutex
	left map[int]int // units not finished per session
}

// finished counts a unit, and its session once every unit of it is done.
func (r *runner) finished(u unit) {
	r.mu.Lock()
	r.left[u.session]--
	done := r.left[u.session] == 0
	r.mu.Unlock()
	sessions := 0
	if done {
		sessions = 1
	}
	r.track.Add(0, sessions)
}

// plan is what a session's replay needs, computed once: each schedule's
// calls, the history's ground truth and the messages' JSON.
type plan struct {
	sess   *benchspec.Session
	sched  map[benchspec.Schedule]*schedulePlan
	checks map[string]string // task -> checkout path
}

type schedulePlan struct {
	calls    []benchspec.Call
	owner    []string // per history message
	request  []bool   // per history message: a stage's request
	messages [][]byte // per history message: its JSON as the harness sends it
	keys     []string // per history message: messageKey
	known    *known   // the messages as sent, decoded
	// tasks are the session's tasks, focus first; unfinished those whose
	// submit stage the schedule does not send.
	tasks, unfinished []string
}

func (p *plan) calls() int {
	return len(p.sched[benchspec.ScheduleBase].calls) + len(p.sched[benchspec.ScheduleSwitch].calls)
}

func newPlan(spec *benchspec.Spec, sess *benchspec.Session, api string) (*plan, error) {
	p := &plan{sess: sess, sched: map[benchspec.Schedule]*schedulePlan{}, checks: map[string]string{}}
	for _, id := range append([]string{sess.Focus}, sess.Distractors...) {
		p.checks[id] = spec.Checkout(sess, id)
	}
	for _, sc := range []benchspec.Schedule{benchspec.ScheduleBase, benchspec.ScheduleSwitch} {
		calls, err := spec.Calls(sess.ID, sc)
		if err != nil {
			return nil, err
		}
		steps := sess.Base
		if sc == benchspec.ScheduleSwitch {
			steps = sess.Switch
		}
		// The history Calls builds: the system prompt, then per step its
		// request and the stage's messages.
		sp := &schedulePlan{calls: calls, owner: []string{""}, request: []bool{false}}
		submitted := map[string]bool{}
		for _, st := range steps {
			t, _ := spec.Task(st.Task)
			submitted[st.Task] = submitted[st.Task] || t.Stages[st.Stage].Submit
			sp.owner = append(sp.owner, st.Task)
			sp.request = append(sp.request, true)
			for range t.Stages[st.Stage].Messages {
				sp.owner = append(sp.owner, st.Task)
				sp.request = append(sp.request, false)
			}
		}
		sp.tasks = append([]string{sess.Focus}, sess.Distractors...)
		for _, id := range sp.tasks {
			if !submitted[id] {
				sp.unfinished = append(sp.unfinished, id)
			}
		}
		longest := calls[len(calls)-1].Messages
		if len(longest) > len(sp.owner) {
			return nil, fmt.Errorf("bench: session %s: %s: history of %d messages, schedule accounts for %d", sess.ID, sc, len(longest), len(sp.owner))
		}
		sp.known = newKnown(api)
		for _, m := range longest {
			b, err := sp.known.encode(m)
			if err != nil {
				return nil, fmt.Errorf("bench: session %s: %w", sess.ID, err)
			}
			sp.messages = append(sp.messages, b)
			sp.keys = append(sp.keys, messageKey(m))
		}
		p.sched[sc] = sp
	}
	return p, nil
}

// history returns call k's history with its ground truth.
func (p *plan) history(sp *schedulePlan, k int) *History {
	n := len(sp.calls[k].Messages)
	h := &History{Messages: sp.calls[k].Messages, Owner: sp.owner[:n], Checkout: p.checks, Requests: map[string][]string{}, keys: sp.keys[:n]}
	for i := range n {
		if sp.request[i] {
			h.Requests[sp.owner[i]] = append(h.Requests[sp.owner[i]], h.Messages[i].Content)
		}
	}
	return h
}

// callObs is what one replayed call showed.
type callObs struct {
	truth         string
	focus         bool
	postSwitch    bool // a focus call after another task's turn (S_switch)
	sent, fwd     int  // body bytes
	recall        float64
	contamination float64
	task          string // X-RCM-Task; "" when no decision
	confidence    float64
	fallback      string
	prefix        float64 // vs the previous call; NaN for the first
	overhead      float64 // ms; NaN when not measured
	cost          CallCost
	classifier    Classifier // X-RCM-Router-Calls
}

// routed reports whether the call was forwarded routed: it has a task and
// did not fall back.
func (o callObs) routed() bool {
	return o.task != "" && o.fallback != "threshold" && o.fallback != "error"
}

// endObs is what the end of an S_switch replay showed: the compaction
// call, and the focus task's record after each of its turns (rcm mode).
type endObs struct {
	coverage, sections float64   // NaN when no compaction call was made
	recordBytes        []float64 // rendered bytes of the focus record per focus turn
}

// ClassifierRule is the scripted upstream's answer to the router's model
// classifier (proxy.Config.RouterModel pointed at it): an abstention, task
// t1 at confidence 0. The classifier is asked only about calls the cheap
// signals leave below the threshold, so they stay fallbacks: a replay with
// it measures the classifier's cost, not what a real model would decide.
var ClassifierRule = scripted.Rule{
	When:  scripted.Match{System: "You route the requests of a coding agent's session to tasks"},
	Reply: scripted.Reply{Text: `{"task": "t1", "confidence": 0}`},
}

// unit replays both schedules of one session in one mode and threshold.
func (r *runner) unit(ctx context.Context, u unit) (*SessionResult, error) {
	// The classifier's calls carry no session: forget them as units end.
	defer r.opts.Upstream.Take("")
	p := r.plans[u.session]
	obs := map[benchspec.Schedule][]callObs{}
	var end *endObs
	for _, sc := range []benchspec.Schedule{benchspec.ScheduleBase, benchspec.ScheduleSwitch} {
		o, e, err := r.schedule(ctx, p, sc, u)
		if err != nil {
			return nil, err
		}
		obs[sc], end = o, e
	}
	res := sessionResult(p.sess, u.mode, u.threshold, obs[benchspec.ScheduleBase], obs[benchspec.ScheduleSwitch], end)
	res.CostBase, res.CostSwitch = scheduleCost(obs[benchspec.ScheduleBase], r.opts.CachePrice), scheduleCost(obs[benchspec.ScheduleSwitch], r.opts.CachePrice)
	return res, nil
}

// schedule replays one schedule; for S_switch it ends with the harness's
// compaction call, and in rcm mode it reads the focus task's record after
// each focus turn.
func (r *runner) schedule(ctx context.Context, p *plan, sc benchspec.Schedule, u unit) ([]callObs, *endObs, error) {
	sp := p.sched[sc]
	th := "native"
	if u.threshold >= 0 {
		th = strconv.FormatFloat(u.threshold, 'f', -1, 64)
	}
	sid := fmt.Sprintf("bench-%s-%s-%s-%s-%s", r.nonce, p.sess.ID, sc, u.mode, th)
	fail := func(k int, err error) error {
		return fmt.Errorf("bench: session %s, %s, mode %s, threshold %s, call %d: %w", p.sess.ID, sc, u.mode, th, k, err)
	}
	defer r.opts.Upstream.Take(sid)
	out := make([]callObs, 0, len(sp.calls))
	end := &endObs{coverage: nan(), sections: nan()}
	var sizes []map[string]int // per focus turn: the records' sizes (rcm, S_switch)
	session := sid             // the proxy's session id (X-RCM-Session)
	var prev []byte
	var contexts [][]byte // what each call forwarded, as a provider caches it
	switched := false     // another task's turn came before this call
	parts := newBodyParts(r.opts.Model, r.opts.API)
	for k, c := range sp.calls {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		body := parts.body(sp.messages, 1, len(c.Messages))
		r.opts.Upstream.Enqueue(sid, reply(c.Response))
		start := time.Now()
		resp, err := r.post(ctx, r.opts.Proxy+r.opts.path(), sid, u.header(), body[0], body[1])
		rtt := time.Since(start)
		if err != nil {
			return nil, nil, fail(k, err)
		}
		got := r.opts.Upstream.Take(sid)
		if len(got) != 1 {
			return nil, nil, fail(k, fmt.Errorf("the upstream received %d requests, want 1", len(got)))
		}
		if s := resp.Get("X-RCM-Session"); s != "" {
			session = s
		}
		fwd := got[0].Body
		o := callObs{
			truth: c.Task, focus: c.Task == p.sess.Focus, sent: len(body[0]) + len(body[1]), fwd: len(fwd),
			task: resp.Get("X-RCM-Task"), fallback: resp.Get("X-RCM-Fallback"),
			prefix: nan(), overhead: nan(),
		}
		o.classifier = parseClassifier(resp.Get("X-RCM-Router-Calls"))
		o.postSwitch = o.focus && switched
		switched = switched || !o.focus
		if o.task != "" {
			o.confidence, _ = strconv.ParseFloat(resp.Get("X-RCM-Confidence"), 64)
		}
		msgs := gjson.GetBytes(fwd, r.opts.member())
		raw := fwd // what prefix stability compares: the messages array, or the whole body without one
		if msgs.IsArray() && msgs.Index > 0 {
			raw = fwd[msgs.Index : msgs.Index+len(msgs.Raw)]
			contexts = append(contexts, callContext(fwd, msgs.Index, len(msgs.Raw)))
		} else {
			contexts = append(contexts, fwd)
		}
		if prev != nil {
			o.prefix = prefixStability(prev, raw)
		}
		prev = raw
		if o.focus {
			h := p.history(sp, k)
			f := sp.known.parse(msgs)
			o.recall = recallOf(h.Requests[p.sess.Focus], f)
			o.contamination = contaminationOf(f, h.Attribute(f), p.sess.Focus)
		}
		if r.opts.Direct != "" && k%overheadSample == 0 {
			d, err := r.direct(ctx, sid+"-direct", c.Response, fwd)
			if err != nil {
				return nil, nil, fail(k, fmt.Errorf("direct call: %w", err))
			}
			o.overhead = float64(rtt-d) / float64(time.Millisecond)
		}
		if r.opts.Render != nil && u.mode == benchspec.ModeRCM && sc == benchspec.ScheduleSwitch && o.focus && (k+1 == len(sp.calls) || sp.calls[k+1].Step != c.Step) {
			s, err := r.recordSizes(ctx, session, k+1)
			if err != nil {
				return nil, nil, fail(k, err)
			}
			sizes = append(sizes, s)
		}
		out = append(out, o)
		r.track.Add(1, 0)
	}
	for i, c := range cacheCosts(contexts) {
		out[i].cost = c
	}
	if sc != benchspec.ScheduleSwitch {
		return out, end, nil
	}
	// The proxy's id of each true task, as routing accuracy maps them.
	got, truth, routed := make([]string, len(out)), make([]string, len(out)), make([]bool, len(out))
	for i, o := range out {
		got[i], truth[i], routed[i] = o.task, o.truth, o.routed()
	}
	ids := map[string]string{}
	for g, t := range mapTasks(got, truth, routed) {
		ids[t] = g
	}
	if id := ids[p.sess.Focus]; id != "" {
		for _, s := range sizes {
			end.recordBytes = append(end.recordBytes, float64(s[id]))
		}
	}
	if err := r.compaction(ctx, p, sp, sid, u, ids, end); err != nil {
		return nil, nil, fail(len(sp.calls), fmt.Errorf("compaction call: %w", err))
	}
	return out, end, nil
}

// compaction sends the harness's compaction call at the end of a schedule,
// as OpenCode builds it from the session's history, lets the scripted model
// answer with one "## Task <id>" section per task (ids: the proxy's), and
// measures what the upstream received: the share of unfinished tasks whose
// every request it holds, and whether it asks for per-task sections.
func (r *runner) compaction(ctx context.Context, p *plan, sp *schedulePlan, sid string, u unit, ids map[string]string, end *endObs) error {
	last := len(sp.calls) - 1
	c := sp.calls[last]
	body := CompactionBody(r.opts.Model, append(c.Messages[:len(c.Messages):len(c.Messages)], c.Response), r.opts.CompactionTail)
	var err error
	switch r.opts.API {
	case APIMessages:
		body, err = anthropicBody(body)
	case APIResponses:
		body, err = responsesBody(body)
	}
	if err != nil {
		return err
	}
	reqs := p.history(sp, last).Requests
	open := map[string]bool{}
	for _, t := range sp.unfinished {
		open[t] = true
	}
	r.opts.Upstream.Enqueue(sid, scripted.Reply{Text: compactionSummary(sp.tasks, ids, reqs, open)})
	if _, err := r.post(ctx, r.opts.Proxy+r.opts.path(), sid, u.header(), body); err != nil {
		return err
	}
	got := r.opts.Upstream.Take(sid)
	if len(got) != 1 {
		return fmt.Errorf("the upstream received %d requests, want 1", len(got))
	}
	fwd := parseForwarded(got[0].Body)
	end.coverage = compactionCoverage(fwd, reqs, sp.unfinished)
	end.sections = 0
	if compactionSections(joinTexts(parseForwarded(body)), joinTexts(fwd)) {
		end.sections = 1
	}
	return nil
}

// joinTexts is the text of every message, one after another.
func joinTexts(fs []Forwarded) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// overheadSample: the proxy's overhead is measured on one call in this many
// (a direct call doubles the upstream's work); percentiles need no more.
const overheadSample = 4

// direct sends the forwarded body straight to the upstream and returns the
// round trip: the same work without the proxy.
func (r *runner) direct(ctx context.Context, sid string, m chat.Message, body []byte) (time.Duration, error) {
	r.opts.Upstream.Enqueue(sid, reply(m))
	defer r.opts.Upstream.Take(sid)
	start := time.Now()
	_, err := r.post(ctx, r.opts.Direct+strings.TrimPrefix(r.opts.path(), "/v1"), sid, http.Header{}, body)
	return time.Since(start), err
}

func nan() float64 { return math.NaN() }
