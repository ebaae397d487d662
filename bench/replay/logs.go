package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/rcm-dev/rcm/bench/chatlog"
	"github.com/rcm-dev/rcm/bench/progress"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/tidwall/gjson"
)

// logPlan is what a real session's replay needs, computed once: its calls
// and, per message of its history, the turn it belongs to and its JSON.
type logPlan struct {
	sess     *chatlog.Session
	calls    []chat.ModelCall
	turn     []int    // per history message: its turn, -1 for the system prompt
	requests []int    // per turn: the index of its request in the history, -1 past its end
	copies   [][]int  // per turn: where a rebuilt history (Codex's compaction) repeats its request
	messages [][]byte // per history message: its JSON as the harness sends it
	keys     []string // per history message: messageKey
	known    *known
}

func newLogPlan(s *chatlog.Session, api string) (*logPlan, error) {
	l := s.Lay(benchspec.OpenCodeSystem(s.Workdir, true))
	p := &logPlan{sess: s, calls: l.Calls, known: newKnown(api)}
	if len(p.calls) == 0 {
		return nil, fmt.Errorf("bench: session %s: no user message", s.Name)
	}
	// The whole history (chat.ModelCall.From), up to the last call's end
	// (a turn's messages after its last assistant message are never sent).
	n := p.end(len(p.calls) - 1)
	history := l.History[:n]
	p.turn = l.Turn[:n]
	for _, at := range l.Request {
		if at >= n {
			at = -1
		}
		p.requests = append(p.requests, at)
	}
	p.copies = make([][]int, len(s.Turns))
	for h, t := range p.turn {
		if t >= 0 && h != p.requests[t] && history[h].Role == chat.RoleUser && history[h].Content == s.Turns[t].Request {
			p.copies[t] = append(p.copies[t], h)
		}
	}
	for _, m := range history {
		b, err := p.known.encode(m)
		if err != nil {
			return nil, fmt.Errorf("bench: session %s: %w", s.Name, err)
		}
		p.messages = append(p.messages, b)
		p.keys = append(p.keys, messageKey(m))
	}
	return p, nil
}

// end is where call k's messages end in the whole history: they are its
// system prompt and history[From:end].
func (p *logPlan) end(k int) int {
	return p.calls[k].From + len(p.calls[k].Messages) - 1
}

// sent reports whether call k sent message h of the whole history: the
// system prompt, and what follows its last compaction.
func (p *logPlan) sent(k, h int) bool {
	return h == 0 || h >= p.calls[k].From && h < p.end(k)
}

// request returns the index of turn t's request in the history, -1 when
// no call sent it.
func (p *logPlan) request(t int) int {
	if t < 0 || t >= len(p.requests) {
		return -1
	}
	return p.requests[t]
}

// sentRequest returns where call k sent turn t's request: the request, or
// its latest copy in a rebuilt history; false when the call sent neither.
func (p *logPlan) sentRequest(k, t int) (int, bool) {
	if t >= 0 && t < len(p.copies) {
		for _, h := range slices.Backward(p.copies[t]) {
			if p.sent(k, h) {
				return h, true
			}
		}
	}
	h := p.request(t)
	return h, h >= 0 && p.sent(k, h)
}

// logObs is what one replayed call of a real session showed.
type logObs struct {
	turn     int  // the call's turn
	first    bool // the first call of its turn: the history ends with its request
	task     string
	conf     float64
	fallback string
	method   string // from the inspector's event; "" in native mode
	sent     int    // body bytes
	fwd      int
	// present counts the forwarded messages by key; texts are the
	// forwarded user messages' texts.
	present map[string]int
	texts   []string
}

// routed reports whether the call was forwarded routed: a decision and no
// fallback.
func (o *logObs) routed() bool {
	return o.task != "" && (o.fallback == "" || o.fallback == "none")
}

// fellBack reports whether the proxy fell back (kept the whole history).
func (o *logObs) fellBack() bool {
	return o.fallback != "" && o.fallback != "none"
}

// Logs replays real sessions (chatlog.Read) through the proxy in each
// mode and threshold, as OpenCode would have sent them (its system prompt
// with the session's Workdir, a git repository), against the scripted
// upstream answering with the recorded assistant messages. It measures
// labelled sessions (see LogMetrics) and lists every unit's decisions per
// request (LogResults.Audit), labelled or not. When ctx ends it stops and
// returns the sessions that finished every unit, with ctx's error.
// Options' Direct, Render and CompactionTail are not used: real sessions
// have no schedules to compare, and no compaction call is added.
func Logs(ctx context.Context, sessions []chatlog.Session, opts Options) (*LogResults, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	plans := make([]*logPlan, len(sessions))
	for i := range sessions {
		p, err := newLogPlan(&sessions[i], opts.API)
		if err != nil {
			return nil, err
		}
		plans[i] = p
	}
	units := unitsOf(len(plans), &opts)
	total := 0
	for _, u := range units {
		total += len(plans[u.session].calls)
	}
	r := &runner{opts: opts, nonce: strconv.FormatUint(rand.Uint64()&0xffffffff, 36),
		track: progress.NewTracker(total, len(plans), opts.Progress), left: map[int]int{}}
	for i := range plans {
		r.left[i] = len(units) / len(plans)
	}
	obs := make([][]logObs, len(units))
	errs := make([]error, len(units))
	progress.Parallel(ctx, opts.Concurrency, len(units), func(i int) {
		obs[i], errs[i] = r.logUnit(ctx, plans[units[i].session], units[i])
		r.finished(units[i])
	})
	done := make([]bool, len(plans))
	for i := range done {
		done[i] = true
	}
	var failures []error
	for i, u := range units {
		if obs[i] == nil || errs[i] != nil {
			done[u.session] = false
		}
		if errs[i] != nil && (ctx.Err() == nil || !errors.Is(errs[i], ctx.Err())) {
			failures = append(failures, errs[i])
		}
	}
	res := logResults(plans, units, obs, done, opts)
	var err error
	res.Interrupted, res.Errors, err = ended(ctx, failures)
	return res, err
}

// logUnit replays one real session in one mode at one threshold.
func (r *runner) logUnit(ctx context.Context, p *logPlan, u unit) ([]logObs, error) {
	th := "native"
	if u.threshold >= 0 {
		th = strconv.FormatFloat(u.threshold, 'f', -1, 64)
	}
	// By the session's index, not its name: names repeat across folders,
	// and a log's name (SpecStory's is its title) can be long or not ASCII.
	sid := fmt.Sprintf("bench-%s-log%d-%s-%s", r.nonce, u.session, u.mode, th)
	fail := func(k int, err error) error {
		return fmt.Errorf("bench: session %s, mode %s, threshold %s, call %d: %w", p.sess.Name, u.mode, th, k, err)
	}
	defer r.opts.Upstream.Take(sid)
	defer r.opts.Upstream.Take("") // the classifier's calls carry no session
	parts := newBodyParts(r.opts.Model, r.opts.API)
	out := make([]logObs, 0, len(p.calls))
	session := sid
	proxy := r.opts.proxyOf(u.session)
	for k, c := range p.calls {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		body := parts.body(p.messages, c.From, p.end(k))
		r.opts.Upstream.Enqueue(sid, reply(c.Response))
		resp, err := r.post(ctx, proxy+r.opts.path(), sid, u.header(), body[0], body[1])
		if err != nil {
			return nil, fail(k, err)
		}
		got := r.opts.Upstream.Take(sid)
		if len(got) != 1 {
			return nil, fail(k, fmt.Errorf("the upstream received %d requests, want 1", len(got)))
		}
		if s := resp.Get("X-RCM-Session"); s != "" {
			session = s
		}
		o := logObs{turn: c.Step, first: k == 0 || p.calls[k-1].Step != c.Step,
			task: resp.Get("X-RCM-Task"), fallback: resp.Get("X-RCM-Fallback"),
			sent: len(body[0]) + len(body[1]), fwd: len(got[0].Body), present: map[string]int{}}
		if h := resp.Get("X-RCM-Confidence"); h != "" { // a summary's decision has one but no task
			o.conf, _ = strconv.ParseFloat(h, 64)
		}
		for _, f := range p.known.parse(gjson.GetBytes(got[0].Body, r.opts.member())) {
			o.present[f.Key]++
			if f.Role == chat.RoleUser {
				o.texts = append(o.texts, f.Text)
			}
		}
		out = append(out, o)
		r.track.Add(1, 0)
	}
	if u.mode == benchspec.ModeNative {
		return out, nil
	}
	v, err := r.events(ctx, proxy, session, len(out))
	if err != nil {
		return nil, fail(len(out), err)
	}
	for i, raw := range v.Events[len(v.Events)-len(out):] {
		var e struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(raw, &e) == nil {
			out[i].method = e.Method
		}
	}
	return out, nil
}
