package fit

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/bench/chatlog"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/router"
)

// TestLogisticRecovers: rows drawn from a known model give back its
// coefficients.
func TestLogisticRecovers(t *testing.T) {
	var want [nf]float64
	want[0], want[1], want[2] = -1, 2, -3
	rng := rand.New(rand.NewPCG(1, 2))
	var rows []weighted
	for range 20000 {
		var x [nf]float64
		x[0], x[1], x[2] = 1, rng.NormFloat64(), rng.NormFloat64()
		p := router.Prob(&want, &x)
		rows = append(rows, weighted{Row{X: x, Y: rng.Float64() < p}, 1})
	}
	got := logistic(rows, 1e-3)
	for k := range 3 {
		if math.Abs(got[k]-want[k]) > 0.15 {
			t.Fatalf("coefficient %d: %.3f, want %.3f (all %v)", k, got[k], want[k], got[:3])
		}
	}
}

// twoTasks is a session in one repository: a date parser, then an
// unrelated cache, then a return to the parser that needs it.
func twoTasks() *Session {
	turn := func(req string, file string) chat.Turn {
		return chat.Turn{Request: req, Messages: []chat.Message{
			{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "a", Type: "function", Function: chat.FunctionCall{Name: "edit", Arguments: `{"filePath":"/home/u/p/` + file + `"}`}}}},
			{Role: chat.RoleTool, ToolCallID: "a", Content: "ok"},
			{Role: chat.RoleAssistant, Content: "Done."},
		}}
	}
	return &Session{Name: "two", Group: "u/p", Real: true, System: benchspec.OpenCodeSystem("/home/u/p", true),
		Turns: []chat.Turn{
			turn("Fix the date parser in dateparse/parser.py: two-digit years come out wrong.", "dateparse/parser.py"),
			turn("Implement an LRU cache in cache/lru.py with get and put.", "cache/lru.py"),
			turn("yes, and also make it thread safe", "cache/lru.py"),
			turn("Back to the date parser: handle time zones too.", "dateparse/parser.py"),
		},
		Gold: []Gold{
			{Task: "T1", Kind: KindNew},
			{Task: "T2", Kind: KindNew},
			{Task: "T2", Kind: KindContinue, Needs: []string{"T2"}},
			{Task: "T1", Kind: KindReturn, Needs: []string{"T1"}},
		}}
}

// TestSimulateMeasures: a router that opens a task at every request splits
// the continue off and loses the return's context; one that always
// continues loses nothing and drops nothing.
func TestSimulateMeasures(t *testing.T) {
	always := func(head string) *router.Coefficients {
		var c router.Coefficients
		c.Continue[0], c.Return[0], c.New[0] = -20, -20, -20
		switch head {
		case router.HeadNew:
			c.New[0] = 20
		case router.HeadContinue:
			c.Continue[0] = 20
		}
		return &c
	}
	ctx := context.Background()
	_, calls, err := Simulate(ctx, twoTasks(), always(router.HeadNew), 0.8, false)
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(calls, true)
	if s.Requests != 4 || s.Split != 1 || s.ReturnsWrong != 1 || s.LostRequest == 0 || s.UnneededDropped != 1 {
		t.Fatalf("always new: %+v", s)
	}
	_, calls, err = Simulate(ctx, twoTasks(), always(router.HeadContinue), 0.8, false)
	if err != nil {
		t.Fatal(err)
	}
	s = Summarize(calls, true)
	if s.LostAll != 0 || s.Split != 0 || s.ReturnsRight != 1 || s.UnneededDropped != 0 || s.NewsDetected != 1 {
		t.Fatalf("always continue: %+v", s)
	}
	// The ceiling does not depend on the router: the cache's turns need
	// none of the date parser's request, the return none of the cache's.
	tt := twoTasks().Turns
	r0, r1, r2 := float64(len(tt[0].Request)), float64(len(tt[1].Request)), float64(len(tt[2].Request))
	if want := (2*r0 + r1 + r2) / (3*r0 + 2*r1 + r2); math.Abs(s.Unneeded-want) > 1e-9 || s.Top != "two" || s.TopShare != 1 {
		t.Fatalf("ceiling %.4f in %q (%.2f), want %.4f in \"two\"", s.Unneeded, s.Top, s.TopShare, want)
	}
	// Teacher forcing labels earlier turns with their gold task: the
	// return's candidates include the date parser's task, safe to route.
	rows, _, err := Simulate(ctx, twoTasks(), always(router.HeadContinue), 0.8, true)
	if err != nil {
		t.Fatal(err)
	}
	safeReturn := false
	for _, r := range rows {
		safeReturn = safeReturn || r.Head == router.HeadReturn && r.Y
	}
	if !safeReturn {
		t.Fatal("forced: no safe return candidate")
	}
}

// TestFoldsKeepGroups: a repository's sessions share a fold.
func TestFoldsKeepGroups(t *testing.T) {
	var ss []*Session
	for i := range 12 {
		ss = append(ss, &Session{Name: string(rune('a' + i)), Group: string(rune('A' + i%5)), Turns: make([]chat.Turn, i+1)})
	}
	fs := folds(ss, 3)
	where := map[string]int{}
	n := 0
	for k, f := range fs {
		for _, s := range f {
			n++
			if w, ok := where[s.Group]; ok && w != k {
				t.Fatalf("group %s in folds %d and %d", s.Group, w, k)
			}
			where[s.Group] = k
		}
	}
	if n != len(ss) || len(fs) != 3 {
		t.Fatalf("%d sessions in %d folds", n, len(fs))
	}
}

// TestDefaults: zero options take Defaults' values (those rcm bench fit
// made router/coef_gen.go with); options set are kept.
func TestDefaults(t *testing.T) {
	var o Options
	o.defaults()
	if o != Defaults() {
		t.Fatalf("zero options: %+v, want %+v", o, Defaults())
	}
	set := Options{Threshold: 0.7, Rounds: 1, Lambda: 2, Folds: 3, Synthetic: 0.2}
	got := set
	got.defaults()
	if got != set {
		t.Fatalf("options %+v became %+v", set, got)
	}
}

// TestRealCompacted: a compacted log (its calls are not prefixes of one
// history) is refused with the turn named, not simulated as if whole.
func TestRealCompacted(t *testing.T) {
	l := chatlog.Session{Name: "c", Repo: "eve/c",
		Turns:  []chat.Turn{{Request: "add the export"}, {Request: "This session is being continued...", Rebuilt: []chat.Rebuild{{}}}},
		Labels: []chatlog.Label{{Task: "T1", Kind: chatlog.KindNew}, {Task: "T1", Kind: chatlog.KindMeta}}}
	if _, err := Real([]chatlog.Session{l}); err == nil || !strings.Contains(err.Error(), "c: turn 2") {
		t.Errorf("err %v, want turn 2 named", err)
	}
	l.Turns[1].Rebuilt = nil
	if ss, err := Real([]chatlog.Session{l}); err != nil || len(ss) != 1 {
		t.Errorf("%v, %v", ss, err)
	}
}
