package router

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rcm-dev/rcm/transcript"
)

// Methods by which a decision was reached, cheapest first.
const (
	MethodTag       = "tag"       // explicit tag: X-RCM-Task or "[task: name]"
	MethodWorkspace = "workspace" // the checkout the turn names or works in (a new one opens a task)
	MethodScored    = "scored"    // the fitted model over the request's features (score.go)
	MethodFollowUp  = "followup"  // a harness's own message or an interruption continues the previous turn's task
	MethodModel     = "model"     // the LLM classifier
	MethodNew       = "new"       // the turn opens a task
	MethodPrior     = "prior"     // the label stored by an earlier call
	MethodSummary   = "summary"   // a post-compaction recap: belongs to every task
)

// Errors returned by Route; the proxy forwards such calls unchanged.
var (
	ErrNoTurn   = errors.New("router: transcript has no turn")
	ErrSideCall = errors.New("router: side calls are not routed")
)

// Prior is what the store holds for one turn (looked up by the turn's
// fingerprint): the label it was given by an earlier call.
type Prior struct {
	Known      bool
	Task       string
	Confidence float64
	Method     string
	Routed     bool // forwarded routed: the label is final
}

// Decision is the task of one turn.
type Decision struct {
	Task       string // "" for Summary turns
	Confidence float64
	Method     string
	// Scores are the candidate tasks' probabilities behind a lexical or
	// model decision, or the chosen task alone; nil for prior and summary
	// decisions.
	Scores map[string]float64
	// Routed: the label is at or above the threshold (or was forwarded
	// routed before) and is final. Persist it with the label.
	Routed bool
}

// Options are per-call settings.
type Options struct {
	// Threshold overrides Config.Threshold when in (0, 1] (X-RCM-Threshold).
	Threshold float64
	// Task is an explicit tag for the current turn (X-RCM-Task); it is
	// lower-cased and ignored unless a valid task name (as NAME in
	// "[task: NAME]").
	Task string
	// Tasks are the ids the session already holds (from the store), so
	// that a new task is never given an id in use, even after compaction
	// removed the turns that introduced them.
	Tasks []string
	// Seeds describe tasks by what the store knows of them (a record's
	// checkout and requests), by task id. A task whose turns the history
	// no longer holds (compaction removed them) is profiled from its seed,
	// so that a request returning to it is routed to it, not to a new task.
	Seeds map[string]string
	// Last is the task of the session's latest routed call (from the
	// store). After a compaction the history holds none of the turns
	// before its summary, so it is what the request after the summary
	// continues.
	Last string
	// Candidates asks for the current turn's scored candidates in
	// Plan.Candidates (the fit reads them; routing does not need them).
	Candidates bool
}

// Plan is the routing of one call.
type Plan struct {
	Turns    []Decision // one per transcript turn
	Current  Decision   // the last turn's decision
	Fallback bool       // Current.Confidence < threshold: everything is kept
	Keep     []int      // ascending turn indexes to forward (all when Fallback)
	Usage    ModelUsage // the classifier's cost, apart from the agent's
	// Candidates the model scored for the current turn, when
	// Options.Candidates asked for them and the model decided it.
	Candidates []Candidate
}

// Router classifies turns. It is safe for concurrent use.
type Router struct {
	cfg   Config
	model *classifier
	coef  *Coefficients
}

// New returns a Router for cfg.
func New(cfg Config) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	r := &Router{cfg: cfg, coef: &fitted}
	if cfg.Coefficients != nil {
		r.coef = cfg.Coefficients
	}
	if cfg.Model != "" {
		r.model = newClassifier(cfg)
	}
	return r, nil
}

// Route labels every turn of t and decides which turns the call keeps.
// prior holds the stored label of each turn (shorter than t.Turns when the
// last turns are new). Routed labels are kept; the current turn is
// (re)classified unless routed; earlier unknown turns are classified with
// the cheap signals. Route never fails because of the classifier.
func (r *Router) Route(ctx context.Context, t *transcript.Transcript, prior []Prior, opt Options) (Plan, error) {
	if t == nil || len(t.Turns) == 0 {
		return Plan{}, ErrNoTurn
	}
	if t.Kind.Side() {
		return Plan{}, ErrSideCall
	}
	if len(prior) > len(t.Turns) {
		return Plan{}, fmt.Errorf("router: %d prior labels for %d turns", len(prior), len(t.Turns))
	}
	thr := r.cfg.Threshold
	if opt.Threshold > 0 && opt.Threshold <= 1 {
		thr = opt.Threshold
	}
	s := call{t: t, f: readFrame(t), thr: thr, ds: make([]Decision, len(t.Turns)), byTask: map[string][]int{}, seeds: opt.Seeds, last: opt.Last, coef: r.coef}
	for _, id := range opt.Tasks {
		s.noteTask(id)
	}
	last := len(t.Turns) - 1
	// A turn the workspace placed shows the session works in checkouts:
	// in a repository, outside it (see frame.outside).
	for _, pr := range prior {
		s.f.outside = s.f.outside || s.f.repo && pr.Known && pr.Method == MethodWorkspace
	}
	var p Plan
	for i, tn := range t.Turns {
		var d Decision
		switch {
		case tn.Kind == transcript.Summary:
			d = Decision{Confidence: 1, Method: MethodSummary, Routed: true}
		case i < len(prior) && prior[i].Known && (prior[i].Routed || i < last):
			pr := prior[i]
			d = Decision{Task: pr.Task, Confidence: pr.Confidence, Method: MethodPrior, Routed: pr.Routed}
		case i == last:
			s.explain = opt.Candidates
			d = s.classify(i, strings.TrimSpace(opt.Task))
			p.Candidates = s.cands
			if d.Confidence < thr && r.model != nil {
				d = r.model.ask(ctx, &s, i, d, &p.Usage)
			}
			d.Routed = d.Confidence >= thr
		default:
			d = s.classify(i, "")
			d.Routed = d.Confidence >= thr
		}
		if math.IsNaN(d.Confidence) || math.IsInf(d.Confidence, 0) {
			// No evidence to measure: never routed, never a task of its own.
			d.Confidence, d.Routed = 0, false
		}
		s.ds[i] = d
		if d.Task != "" {
			s.noteTask(d.Task)
			if d.Routed {
				s.byTask[d.Task] = append(s.byTask[d.Task], i)
			}
		}
	}
	if d := s.ds[last]; d.Routed && d.Method == MethodNew {
		s.absorb(last)
	}
	p.Turns = s.ds
	p.Current = s.ds[last]
	p.Fallback = p.Current.Confidence < thr
	p.Keep = make([]int, 0, len(t.Turns))
	for i, d := range s.ds {
		// Unrouted turns are kept: their task is a guess.
		if p.Fallback || i == last || d.Task == "" || !d.Routed || d.Task == p.Current.Task {
			p.Keep = append(p.Keep, i)
		}
	}
	return p, nil
}

// call is the state of one Route call: the decisions so far and, per
// task, the routed turns that describe it.
type call struct {
	t      *transcript.Transcript
	f      frame
	thr    float64
	ds     []Decision
	tasks  []string         // ids in order of appearance
	byTask map[string][]int // routed turns of each task, ascending
	seeds  map[string]string
	last   string // Options.Last
	coef   *Coefficients
	// explain: keep the scored candidates of the turn being classified.
	explain bool
	cands   []Candidate
}

func (s *call) noteTask(id string) {
	if id == "" {
		return
	}
	for _, x := range s.tasks {
		if x == id {
			return
		}
	}
	s.tasks = append(s.tasks, id)
}

// newID numbers a new task after every "t<n>" in use.
func (s *call) newID() string {
	n := 0
	for _, id := range s.tasks {
		if k, err := strconv.Atoi(strings.TrimPrefix(id, "t")); err == nil && strings.HasPrefix(id, "t") && k > n {
			n = k
		}
	}
	return "t" + strconv.Itoa(n+1)
}

func one(task string, conf float64, method string) Decision {
	return Decision{Task: task, Confidence: conf, Method: method, Scores: map[string]float64{task: conf}}
}

// Confidences of the structural signals, checked on the bench's sessions
// in their checkout layout (TestInterleaved in bench/spec): a checkout that
// one task works in says which task a turn is, and real sessions in one
// repository never reach these.
const (
	confWorkspace = 0.97 // the checkout named by the request or used as workdir
	confTouched   = 0.9  // a checkout only touched by a tool call's path
	confNew       = 0.95 // a checkout no task has used yet
	confNewMixed  = 0.85 // a new checkout named beside known ones
)

// classify decides turn i from its signals and the routed turns before it.
func (s *call) classify(i int, header string) Decision {
	q := newQuery()
	sig := read(s.t, &s.f, s.t.Turns[i], queryCap, q.adder(srcRequest), q.adder(srcActs))
	q.request = sig.words
	if tag := strings.ToLower(header); validName(tag) {
		return one(tag, 1, MethodTag)
	}
	if sig.tag != "" {
		return one(sig.tag, 1, MethodTag)
	}
	if len(s.byTask) == 0 && len(s.tasks) == 0 {
		// The first task of a session: there is nothing else it could be.
		return one(s.newID(), 1, MethodNew)
	}
	if t, ok := s.opening(i); ok {
		return one(t, 1, MethodNew)
	}
	prof := s.profiles(i, q)
	d, ok, only := s.workspace(sig, prof)
	// A message sent before the agent answered the previous request (a
	// slash command and its expansion, an addendum), or a harness's own
	// message (a loaded tool, a skill's text, a command's output), continues
	// that request's task unless it names another task's checkout: after
	// compaction Codex and Claude Code re-send earlier requests without
	// their answers, so an unanswered request before a return is no sign of
	// an addendum. Nor is a command that ran without the model (its output,
	// aider's /model): the request after it is decided on its own.
	// The request just after a compaction's summary has no request before
	// it in the history to continue so: it is scored.
	if pd, held := s.latest(i); i > 0 && held && (s.interrupts(i) && !ranLocally(s.request(i-1)) || artifact(s.request(i))) {
		prev := pd.Task
		known := ok && d.Method == MethodWorkspace
		if (!known || d.Task == prev) && (only == nil || slices.Contains(only, prev)) {
			return one(prev, s.confidenceOf(prev, i), MethodFollowUp)
		}
	}
	if ok {
		return d
	}
	return s.scored(i, q, prof, only)
}

// opening reports whether turn i is a session's first request after
// only the harness's own messages (Claude Code's caveat, a /clear, a
// /model and what they printed), and the task those opened: there is
// nothing else it could be.
func (s *call) opening(i int) (string, bool) {
	if i == 0 || len(s.tasks) != 1 || len(s.seeds) > 0 {
		return "", false
	}
	for j := range i {
		if s.t.Turns[j].Kind != transcript.Request || !artifact(s.request(j)) {
			return "", false
		}
	}
	return s.tasks[0], true
}

// confidenceOf is the confidence of task's latest decision before turn i.
func (s *call) confidenceOf(task string, i int) float64 {
	for j := i - 1; j >= 0; j-- {
		if s.ds[j].Task == task {
			return s.ds[j].Confidence
		}
	}
	return 0
}

// workspace decides from the checkouts the turn names or works in: the
// request's and working directories first, paths its tool calls merely
// touch after. When the roots are shared by several tasks it returns them
// as the candidates.
func (s *call) workspace(sig signals, prof []profile) (d Decision, ok bool, only []string) {
	strong := append(slices.DeleteFunc(slices.Clone(sig.named), func(ws string) bool { return !s.f.checkout(ws) }), sig.workdirs...)
	roots, conf := strong, confWorkspace
	if len(roots) == 0 {
		roots, conf = slices.DeleteFunc(slices.Clone(sig.touched), func(ws string) bool { return !s.f.checkout(ws) }), confTouched
	}
	if len(roots) == 0 {
		return Decision{}, false, nil
	}
	fresh := false
	for _, r := range roots {
		if r == "." {
			continue // the working directory itself: every task's
		}
		own := owners(prof, r)
		if len(own) == 0 {
			fresh = fresh || len(strong) > 0
		}
		for _, o := range own {
			if !slices.Contains(only, o) {
				only = append(only, o)
			}
		}
	}
	switch {
	case fresh && len(only) == 0:
		return one(s.newID(), confNew, MethodWorkspace), true, nil
	case fresh:
		// A new checkout beside known ones: most likely a new task that
		// refers to another (or names an example path).
		return one(s.newID(), confNewMixed, MethodWorkspace), true, nil
	case len(only) == 1:
		return one(only[0], conf, MethodWorkspace), true, nil
	case len(only) == len(prof):
		return Decision{}, false, nil // every task works there: no sign
	}
	return Decision{}, false, only
}

// interrupts reports whether turn i opens before the agent answered the
// previous request at all: that turn is a request with nothing after it.
func (s *call) interrupts(i int) bool {
	prev := s.t.Turns[i-1]
	if prev.Kind != transcript.Request {
		return false
	}
	return prev.End-prev.Start == 1
}

func owners(prof []profile, root string) []string {
	var own []string
	for k := range prof {
		for _, r := range prof[k].roots {
			if r == root {
				own = append(own, prof[k].task)
				break
			}
		}
	}
	return own
}

// absorb gives the task that turn i opens the turns just before it that
// fell back and were never routed: a request too short to place opened
// the task, and the turns that followed it showed it was new work. Those
// turns were forwarded with everything, so nothing was hidden from them;
// from now on they are the new task's.
func (s *call) absorb(i int) {
	d := s.ds[i]
	for j := i - 1; j >= 0; j-- {
		if s.ds[j].Routed || s.t.Turns[j].Kind == transcript.Summary {
			return
		}
		s.ds[j] = Decision{Task: d.Task, Confidence: d.Confidence, Method: MethodNew, Routed: true}
	}
}
