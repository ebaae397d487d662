package spec_test

// Tests of package router over the bench's sessions of the public data: the
// router's accuracy where it matters, on what the bench replays. They live
// here so that router's own tests need no bench (issue 12).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/bench/trajectory"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/router"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/sjson"
)

// The four real single-task Claude Code sessions, read by the bench
// importer, must stay one task at every call: no false switch. A request
// that looks unlike the task (a side question) may fall back, which
// forwards what native would.
func TestSWETogetherStaysOneTask(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(chattest.SharedData(t, "sessions", "swe-together"), "*.json"))
	if len(files) != 4 {
		t.Fatalf("%d swe-together sessions, want 4", len(files))
	}
	r := mustNew(t, router.Config{})
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			tr, skips, err := trajectory.ReadClaudeCode(raw, f, strings.TrimSuffix(filepath.Base(f), ".json"))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range skips {
				t.Logf("import: %s", s)
			}
			calls := chat.Lay("You are a coding agent.", tr.Turns).Calls
			if len(calls) == 0 {
				t.Fatal("no calls")
			}
			st := store{}
			var h chattest.History
			requests, fallbacks := 0, 0
			for _, c := range calls {
				if c.Response.Role == "" {
					continue // a turn with no recorded answer
				}
				h.Add(c.Messages[h.Len():]...)
				_, p := st.route(t, r, h.Body(), router.Options{})
				for i, d := range p.Turns {
					if d.Task != "t1" {
						t.Fatalf("call %d: turn %d labelled %q (%s, %.2f): a false switch", c.Index, i, d.Task, d.Method, d.Confidence)
					}
				}
				if p.Fallback {
					fallbacks++ // never worse than native: the whole history goes out
				}
				requests = len(p.Turns)
			}
			t.Logf("%d calls (%d fell back), %d request turns, all on t1", len(calls), fallbacks, requests)
		})
	}
}

var debugRoute = os.Getenv("RCM_ROUTER_DEBUG") != ""

// metrics of a replay of interleaved sessions.
type metrics struct {
	calls, right, fallback, routed, routedRight int
	sure, sureRight                             int // decisions of confidence >= 0.8
	turns, turnsRight                           int
	bins                                        [5][2]int // confidence [0,.5) [.5,.8) [.8,.9) [.9,.95) [.95,1]: calls, right
	methods                                     map[string][2]int
}

func (m *metrics) observe(conf float64, right, fallback bool, method string) {
	m.calls++
	bin := 0
	switch {
	case conf >= 0.95:
		bin = 4
	case conf >= 0.9:
		bin = 3
	case conf >= 0.8:
		bin = 2
	case conf >= 0.5:
		bin = 1
	}
	m.bins[bin][0]++
	if conf >= 0.8 {
		m.sure++
		if right {
			m.sureRight++
		}
	}
	mm := m.methods[method]
	mm[0]++
	if right {
		m.right++
		m.bins[bin][1]++
		mm[1]++
	}
	m.methods[method] = mm
	if fallback {
		m.fallback++
	} else {
		m.routed++
		if right {
			m.routedRight++
		}
	}
}

func (m *metrics) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "calls %d: accuracy %.4f, fallback %.4f, routed precision %.4f, confidence >= 0.8 right %.4f; turns %d: final-label accuracy %.4f\n",
		m.calls, frac(m.right, m.calls), frac(m.fallback, m.calls), frac(m.routedRight, m.routed), frac(m.sureRight, m.sure),
		m.turns, frac(m.turnsRight, m.turns))
	for k, name := range []string{"[0,.5)", "[.5,.8)", "[.8,.9)", "[.9,.95)", "[.95,1]"} {
		fmt.Fprintf(&b, "  confidence %-9s calls %5d right %.4f\n", name, m.bins[k][0], frac(m.bins[k][1], m.bins[k][0]))
	}
	for name, mm := range m.methods {
		fmt.Fprintf(&b, "  method %-10s calls %5d right %.4f\n", name, mm[0], frac(mm[1], mm[0]))
	}
	return b.String()
}

func frac(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// switchSession is a Switch-SWE session of the shared data: every call of
// its S_switch schedule, each with its ground-truth task.
type switchSession struct {
	spec  *benchspec.Spec
	sess  *benchspec.Session
	calls []benchspec.Call
}

// switchSessions reads the mini-swe-agent trajectories of the shared data
// with the bench importer and assembles them into Switch-SWE sessions with
// the bench's default seed.
func switchSessions(t *testing.T, layout, returns string) []switchSession {
	t.Helper()
	tasks, skips, err := benchspec.ReadData(chattest.SharedData(t), benchspec.FormatMiniSWE)
	if err != nil {
		t.Fatal(err)
	}
	spec, more, err := benchspec.NewSpec("router", tasks, 1)
	if err != nil {
		t.Fatal(err)
	}
	spec.Layout, spec.Returns = layout, returns
	t.Logf("%d tasks, %d sessions (%d import and assembly notes)", len(tasks), len(spec.Sessions), len(skips)+len(more))
	var out []switchSession
	for i := range spec.Sessions {
		s := &spec.Sessions[i]
		calls, err := spec.Calls(s.ID, benchspec.ScheduleSwitch)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, switchSession{spec, s, calls})
	}
	return out
}

// variant says what of the bench's replay a router test keeps: the
// requests as the bench writes them, each naming the task's checkout, or
// the hints requests as the hints text alone (the issue and submit
// requests still name it); and the workdir argument of the bash calls or
// not (then only the commands' own paths place them).
type variant struct {
	named, workdir bool
}

// apply returns m, a message first sent on call c, as the variant sends it.
func (v variant) apply(t *testing.T, s switchSession, c benchspec.Call, m chat.Message) chat.Message {
	if m.Role == chat.RoleUser && !v.named && c.Stage > 0 {
		task, _ := s.spec.Task(c.Task)
		if task.Stages[c.Stage].Submit {
			return m
		}
		prefix := strings.ReplaceAll(benchspec.HintsRequest(""), benchspec.CheckoutPlaceholder, s.spec.Checkout(s.sess, c.Task))
		text, ok := strings.CutPrefix(m.Content, prefix)
		if !ok {
			t.Fatalf("%s: %s stage %d: request not written by bench.HintsRequest: %.80q", s.sess.ID, c.Task, c.Stage, m.Content)
		}
		m.Content = text
		return m
	}
	if len(m.ToolCalls) == 0 || v.workdir {
		return m
	}
	calls := make([]chat.ToolCall, len(m.ToolCalls)) // calls share their messages
	for i, tc := range m.ToolCalls {
		args, err := sjson.Delete(tc.Function.Arguments, "workdir")
		if err != nil {
			t.Fatal(err)
		}
		tc.Function.Arguments = args
		calls[i] = tc
	}
	m.ToolCalls = calls
	return m
}

// replay runs every call of the sessions through the router, as the proxy
// would, and scores the current turn's decision against the call's
// ground-truth task; the router names tasks t1, t2, ... in the order they
// first appear.
func replay(t *testing.T, sessions []switchSession, thr float64, v variant) *metrics {
	r := mustNew(t, router.Config{Threshold: thr})
	m := &metrics{methods: map[string][2]int{}}
	for _, s := range sessions {
		label := map[string]string{}
		var truth []string // the label of each request turn
		st := store{}
		var h chattest.History
		var final []router.Decision
		for _, c := range s.calls {
			for _, msg := range c.Messages[h.Len():] {
				h.Add(v.apply(t, s, c, msg))
			}
			if _, ok := label[c.Task]; !ok {
				label[c.Task] = fmt.Sprintf("t%d", len(label)+1)
			}
			if len(truth) == c.Step {
				truth = append(truth, label[c.Task])
			}
			_, p := st.route(t, r, h.Body(), router.Options{})
			if len(p.Turns) != c.Step+1 {
				t.Fatalf("%s call %d: transcript has %d turns, want %d", c.Session, c.Index, len(p.Turns), c.Step+1)
			}
			m.observe(p.Current.Confidence, p.Current.Task == label[c.Task], p.Fallback, p.Current.Method)
			if debugRoute {
				t.Logf("%s call %d step %d truth %s got %s %.3f %s fb=%v %v", c.Session, c.Index, c.Step, label[c.Task], p.Current.Task, p.Current.Confidence, p.Current.Method, p.Fallback, p.Current.Task == label[c.Task])
			}
			final = p.Turns
			if !p.Fallback {
				checkKeep(t, p)
			}
		}
		for ti, d := range final {
			m.turns++
			if d.Task == truth[ti] {
				m.turnsRight++
			}
		}
	}
	return m
}

// checkKeep: a routed plan keeps the current task's routed turns and the
// current turn.
func checkKeep(t *testing.T, p router.Plan) {
	t.Helper()
	if p.Keep[len(p.Keep)-1] != len(p.Turns)-1 {
		t.Fatalf("current turn not kept: %v", p.Keep)
	}
	kept := map[int]bool{}
	for _, k := range p.Keep {
		kept[k] = true
	}
	for i, d := range p.Turns {
		if d.Task == p.Current.Task && !kept[i] {
			t.Fatalf("turn %d of the current task %s dropped", i, d.Task)
		}
	}
}

// TestInterleaved replays the bench's Switch-SWE sessions of the shared
// data. The near sessions (a distractor shares a directory with the focus
// task) are the hard ones and are replayed in every variant; the far ones
// only with the bench's own requests, and not with -short.
func TestInterleaved(t *testing.T) {
	all := switchSessions(t, benchspec.LayoutCheckout, "")
	shared := switchSessions(t, benchspec.LayoutShared, "")
	untitled := switchSessions(t, benchspec.LayoutShared, benchspec.ReturnsUntitled)
	var near []switchSession
	for _, s := range all {
		if s.sess.Kind == benchspec.KindNear {
			near = append(near, s)
		}
	}
	if testing.Short() {
		all = near
	}
	for _, v := range []struct {
		name     string
		sessions []switchSession
		variant
		// floors at threshold 0.8
		accuracy, fallback, precision, sure float64
	}{
		{"named", all, variant{named: true, workdir: true}, 0.98, 0.10, 0.95, 0.95},
		{"workdir", near, variant{workdir: true}, 0.98, 0.10, 0.95, 0.95},
		// Hints that name nothing and tool calls without a working
		// directory: nothing says which task, so most of those calls fall
		// back (what native forwards); the routed ones must be right.
		{"bare", near, variant{}, 0.95, 0.40, 0.98, 0.98},
		// One checkout: the fitted model decides. It is fitted mostly on
		// people's sessions (the bench's 0.45 of the weight),
		// where a new task at a short request is rarely safe, with the L2
		// penalty chosen on people's context (100; README, "How the
		// penalty and the synthetic weight were chosen"), so it falls
		// back more and routes less surely than the hand-set router that
		// was tuned on these sessions (0.95 / 0.98 then): floors at this
		// fit's figures (0.921, 0.043, 0.957 at penalty 100; 0.918, 0.039,
		// 0.953 at penalty 70, synthetic weight 0.45; 0.862, 0.097, 0.942 at 0.3; 0.843, 0.116, 0.938
		// before a request after a local command was decided on its own;
		// 0.866, 0.110, 0.955 before the cap on continuing a guess, whose refit traded them
		// for people's context; 0.700, 0.267, 0.919 at a fifth of the
		// weight, 0.569, 0.335, 0.834 before the titled feature, at
		// penalty 30).
		// A task the router missed shifts the ids of every later one,
		// which this accuracy counts wrong (the bench replay maps ids).
		{"shared", shared, variant{named: true, workdir: true}, 0.91, 0.05, 0.95, 0.95},
		// Returning requests that do not name their task: many fall back
		// (0.891, 0.262, 0.953 at penalty 100, whose fallbacks cost tokens
		// where penalty 70's routes cost people's context; 0.888, 0.242,
		// 0.947 at 70; 0.831, 0.333, 0.933 at weight 0.3; 0.813, 0.346, 0.928 before local commands
		// were told apart; 0.836, 0.345, 0.949 before the cap).
		{"untitled", untitled, variant{named: true, workdir: true}, 0.88, 0.28, 0.94, 0.94},
	} {
		t.Run(v.name, func(t *testing.T) {
			m := replay(t, v.sessions, 0.8, v.variant)
			t.Logf("%d sessions, threshold 0.8:\n%s", len(v.sessions), m)
			if got := frac(m.right, m.calls); got < v.accuracy {
				t.Errorf("accuracy %.4f < %.2f", got, v.accuracy)
			}
			if got := frac(m.fallback, m.calls); got > v.fallback {
				t.Errorf("fallback %.4f > %.2f", got, v.fallback)
			}
			if got := frac(m.routedRight, m.routed); got < v.precision {
				t.Errorf("routed precision %.4f < %.2f", got, v.precision)
			}
			if got := frac(m.sureRight, m.sure); got < v.sure {
				t.Errorf("decisions of confidence >= 0.8: right %.4f < %.2f", got, v.sure)
			}
		})
	}
}

func mustNew(t testing.TB, cfg router.Config) *router.Router {
	t.Helper()
	r, err := router.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// store mimics the proxy's label store: labels by turn fingerprint, a
// routed label never replaced.
type store map[transcript.Fingerprint]router.Prior

// route runs one call as the proxy would: priors in, labels out.
func (s store) route(t testing.TB, r *router.Router, raw []byte, opt router.Options) (*transcript.Transcript, router.Plan) {
	t.Helper()
	tr := chattest.Parse(t, raw)
	fps := tr.Fingerprints()
	priors := make([]router.Prior, len(fps))
	for i, fp := range fps {
		priors[i] = s[fp]
	}
	p, err := r.Route(context.Background(), tr, priors, opt)
	if err != nil {
		t.Fatalf("route: %v", err)
	}
	for i, fp := range fps {
		if old, ok := s[fp]; ok && old.Routed {
			continue
		}
		d := p.Turns[i]
		s[fp] = router.Prior{Known: true, Task: d.Task, Confidence: d.Confidence, Method: d.Method, Routed: d.Routed}
	}
	return tr, p
}
