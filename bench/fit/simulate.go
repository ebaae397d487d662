package fit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/router"
	"github.com/rcm-dev/rcm/transcript"
)

// Session is one labelled session: its turns as a harness sends them and the
// gold label of each.
type Session struct {
	Name  string
	Group string // the repository: folds hold whole groups
	// Real: a person's session (the figures are over these);
	// false for the bench's synthetic sessions.
	Real   bool
	System string // the system prompt the harness sends
	Turns  []chat.Turn
	Gold   []Gold // one per turn
	// Sampled: of a turn's calls only the first two, those at a power of
	// two and the last are made. The bench's turns run to a hundred tool
	// steps, and each call parses the whole history again: replaying
	// every one costs the square of a turn's length, while a turn's
	// decision changes only as its tool calls add evidence.
	Sampled bool
}

// Gold is the hand label of one request.
type Gold struct {
	Task  string
	Kind  string // new, continue, return, meta
	Needs []string
}

// Kinds of request.
const (
	KindNew      = "new"
	KindContinue = "continue"
	KindReturn   = "return"
	KindMeta     = "meta"
)

// Row is one scored candidate of one call and whether routing there was safe.
type Row struct {
	Head string
	X    [router.Features]float64
	Y    bool
}

// Call is what one simulated call decided and what that did to the context.
type Call struct {
	Session string
	Real    bool
	Turn    int  // the request's index in the session
	First   bool // the call at the request (its history ends with it)
	Kind    string
	Task    string // the router's task
	Conf    float64
	Method  string
	Routed  bool
	Fresh   bool    // the task is new: no earlier turn has it
	PNew    float64 // the new head's probability (0 when it was not asked)
	// Lost: the forwarded turns lack an earlier request of a task the
	// request needs.
	Lost bool
	// Safe: routed there the call loses nothing and is the request's task.
	Safe bool
	// Split: a routed continue request labelled otherwise than its task's
	// previous request.
	Split bool
	// Return: for a return request, "right", "wrong" or "fallback".
	Return string
	// Unneeded bytes of earlier requests (neither the request's task nor
	// one it needs) and how many of them were left out; bytes of all
	// earlier requests; bytes sent and forwarded (the messages' text).
	Unneeded, Dropped, Requested, Sent, Forwarded int
}

// body lays a history out as an OpenAI chat body.
func body(system string, ms []chat.Message) ([]byte, error) {
	all := append([]chat.Message{{Role: chat.RoleSystem, Content: system}}, ms...)
	return json.Marshal(map[string]any{"model": "fit", "messages": all})
}

type prior map[transcript.Fingerprint]router.Prior

// Simulate replays s through a router with coef at threshold thr, as the
// proxy would (labels stored by fingerprint, a routed label kept), and
// returns the scored candidates of every call with their outcome, and what
// each call decided. Forced, every earlier turn is labelled with its gold
// task as if routed right (teacher forcing): the rows then show the
// candidates a right router meets (returns, other tasks' turns), which a
// router that has not learnt to open tasks never reaches.
func Simulate(ctx context.Context, s *Session, coef *router.Coefficients, thr float64, forced bool) ([]Row, []Call, error) {
	r, err := router.New(router.Config{Threshold: thr, Coefficients: coef})
	if err != nil {
		return nil, nil, err
	}
	store := prior{}
	var rows []Row
	var calls []Call
	var history []chat.Message
	for ti, turn := range s.Turns {
		history = append(history, chat.Message{Role: chat.RoleUser, Content: turn.Request})
		// A call before each assistant message, and the turn's first call
		// at its request even when the log recorded no answer.
		first := true
		emit := func() error {
			rs, c, err := s.call(ctx, r, store, history, ti, first, forced)
			if err != nil {
				return err
			}
			rows = append(rows, rs...)
			calls = append(calls, c)
			first = false
			return nil
		}
		answers := 0
		for _, m := range turn.Messages {
			if m.Role == chat.RoleAssistant {
				answers++
			}
		}
		a := 0
		for _, m := range turn.Messages {
			if m.Role == chat.RoleAssistant {
				a++
				if !s.Sampled || a <= 2 || a&(a-1) == 0 || a == answers {
					if err := emit(); err != nil {
						return nil, nil, err
					}
				}
			}
			history = append(history, m)
		}
		if answers == 0 {
			if err := emit(); err != nil {
				return nil, nil, err
			}
		}
	}
	return rows, calls, nil
}

// call routes one call and scores what it did.
func (s *Session) call(ctx context.Context, r *router.Router, store prior, history []chat.Message, ti int, first, forced bool) ([]Row, Call, error) {
	b, err := body(s.System, history)
	if err != nil {
		return nil, Call{}, err
	}
	tr, err := transcript.Parse(transcript.OpenAIChat, b, transcript.Hints{})
	if err != nil {
		return nil, Call{}, fmt.Errorf("fit: %s turn %d: %w", s.Name, ti, err)
	}
	// The session's turns are the transcript's request turns, in order.
	idx := make([]int, len(tr.Turns)) // transcript turn -> session turn, -1 for none
	n := 0
	for i, t := range tr.Turns {
		idx[i] = -1
		if t.Kind == transcript.Request {
			idx[i] = n
			n++
		}
	}
	if n != ti+1 {
		return nil, Call{}, fmt.Errorf("fit: %s turn %d: the transcript has %d request turns", s.Name, ti, n)
	}
	fps := tr.Fingerprints()
	ps := make([]router.Prior, len(fps))
	for i, fp := range fps {
		ps[i] = store[fp]
		if forced && i < len(fps)-1 && idx[i] >= 0 {
			ps[i] = router.Prior{Known: true, Task: strings.ToLower(s.Gold[idx[i]].Task), Confidence: 1, Method: router.MethodPrior, Routed: true}
		}
	}
	plan, err := r.Route(ctx, tr, ps, router.Options{Candidates: true})
	if err != nil {
		return nil, Call{}, fmt.Errorf("fit: %s turn %d: %w", s.Name, ti, err)
	}
	for i, fp := range fps {
		if old, ok := store[fp]; ok && old.Routed {
			continue
		}
		d := plan.Turns[i]
		store[fp] = router.Prior{Known: true, Task: d.Task, Confidence: d.Confidence, Method: d.Method, Routed: d.Routed}
	}
	cur := len(tr.Turns) - 1
	g := s.Gold[ti]
	o := outcome{s: s, tr: tr, plan: &plan, idx: idx, cur: cur, g: g}
	var rows []Row
	pNew := 0.0
	for _, c := range plan.Candidates {
		rows = append(rows, Row{Head: c.Head, X: c.X, Y: o.safe(c.Head, c.Task)})
		if c.Head == router.HeadNew {
			pNew = c.P
		}
	}
	kept := map[int]bool{}
	for _, k := range plan.Keep {
		kept[k] = true
	}
	d := plan.Current
	c := Call{Session: s.Name, Real: s.Real, Turn: ti, First: first, Kind: g.Kind, Task: d.Task, Conf: d.Confidence,
		Method: d.Method, Routed: !plan.Fallback, PNew: pNew}
	c.Lost = o.lost(func(j int) bool { return kept[j] })
	c.Fresh = true // the task is one no earlier turn has
	for j := 0; j < cur; j++ {
		c.Fresh = c.Fresh && plan.Turns[j].Task != d.Task
	}
	c.Safe = !c.Lost && o.right(d.Task, c.Fresh)
	for j := 0; j < cur; j++ {
		n := len(tr.Messages[tr.Turns[j].Start].Text())
		if idx[j] >= 0 {
			c.Requested += n
		}
		for k := tr.Turns[j].Start; k < tr.Turns[j].End; k++ {
			m := len(tr.Messages[k].Text())
			c.Sent += m
			if kept[j] {
				c.Forwarded += m
			}
		}
		if sj := idx[j]; sj >= 0 && s.Gold[sj].Task != g.Task && !slices.Contains(g.Needs, s.Gold[sj].Task) {
			c.Unneeded += n
			if !kept[j] {
				c.Dropped += n
			}
		}
	}
	if c.Routed && (g.Kind == KindContinue) {
		c.Split = d.Task != o.taskOf(g.Task)
	}
	if g.Kind == KindReturn {
		switch {
		case !c.Routed:
			c.Return = "fallback"
		case d.Task == o.taskOf(g.Task) && !c.Fresh:
			c.Return = "right"
		default:
			c.Return = "wrong"
		}
	}
	return rows, c, nil
}

// outcome judges the decisions of one call against the gold labels.
type outcome struct {
	s    *Session
	tr   *transcript.Transcript
	plan *router.Plan
	idx  []int
	cur  int
	g    Gold
}

// lost reports whether an earlier request of a task the request needs is
// left out of the turns keep holds.
func (o *outcome) lost(keep func(int) bool) bool {
	for j := 0; j < o.cur; j++ {
		sj := o.idx[j]
		if sj < 0 || keep(j) {
			continue
		}
		if slices.Contains(o.g.Needs, o.s.Gold[sj].Task) {
			return true
		}
	}
	return false
}

// taskOf is the router's task of the gold task's latest earlier request.
func (o *outcome) taskOf(gold string) string {
	for j := o.cur - 1; j >= 0; j-- {
		if sj := o.idx[j]; sj >= 0 && o.s.Gold[sj].Task == gold {
			return o.plan.Turns[j].Task
		}
	}
	return ""
}

// right reports whether routing to task (a new one when fresh) names the
// request's own task. A new task takes along the unrouted turns just
// before it (router.absorb), so it is right when the request's task has no
// earlier turn outside that run.
func (o *outcome) right(task string, fresh bool) bool {
	if !fresh {
		return task != "" && task == o.taskOf(o.g.Task)
	}
	run := o.cur
	for run > 0 && !o.plan.Turns[run-1].Routed {
		run--
	}
	for j := 0; j < run; j++ {
		if sj := o.idx[j]; sj >= 0 && o.s.Gold[sj].Task == o.g.Task {
			return false
		}
	}
	return true
}

// safe reports whether routing the call to the candidate would keep every
// earlier request it needs and name its own task.
func (o *outcome) safe(head, task string) bool {
	fresh := head == router.HeadNew
	keep := func(j int) bool {
		d := o.plan.Turns[j]
		return !d.Routed || d.Task == "" || !fresh && d.Task == task
	}
	return !o.lost(keep) && o.right(task, fresh)
}
