package replay

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/bench/spec"
)

// TestCacheCosts: a call's cached part is the longest prefix it shares
// with any earlier call of the session, not only the previous one.
func TestCacheCosts(t *testing.T) {
	sys := strings.Repeat("s", 400)               // 100 tokens
	a1 := sys + strings.Repeat("a", 400)          // 200 tokens
	b1 := sys + strings.Repeat("b", 800)          // 300 tokens
	a2 := a1 + strings.Repeat("A", 400)           // extends a1 after b1 came between
	moved := sys + "R" + strings.Repeat("a", 799) // a record moved before the history
	got := cacheCosts([][]byte{[]byte(a1), []byte(b1), []byte(a2), []byte(moved)})
	want := []CallCost{
		{Cached: 0, Rest: 200},   // nothing sent before
		{Cached: 100, Rest: 200}, // the system prompt
		{Cached: 200, Rest: 100}, // all of a1, across b1
		{Cached: 100, Rest: 200}, // only the system prompt: what follows moved
	}
	if !slices.Equal(got, want) {
		t.Errorf("CacheCosts = %v, want %v", got, want)
	}
	// A shared prefix that ends inside a token bills that token whole.
	if got := cacheCosts([][]byte{[]byte("abcdefgh"), []byte("abcdefXY")}); got[1] != (CallCost{Cached: 1, Rest: 1}) {
		t.Errorf("partial token: %v", got[1])
	}
}

func TestCostOf(t *testing.T) {
	c := costOf([]CallCost{{0, 200}, {100, 200}, {200, 100}}, 0.1)
	if c.Calls != 3 || c.Input != 800 || c.Cached != 300 {
		t.Fatalf("cost %+v", c)
	}
	if math.Abs(float64(c.Billed)-(500+30)) > 1e-9 || math.Abs(float64(c.CachedShare)-300.0/800) > 1e-9 {
		t.Errorf("billed %v, cached share %v", c.Billed, c.CachedShare)
	}
	if !math.IsNaN(float64(c.Ratio)) {
		t.Error("a session's ratio is set over sessions, not here")
	}
	if e := costOf(nil, 0.1); !math.IsNaN(float64(e.CachedShare)) || e.Billed != 0 {
		t.Errorf("no calls: %+v", e)
	}
}

// TestCostRatios: each mode's billed tokens over native's, per schedule,
// summed over the sessions before dividing (a bill, not a mean of ratios).
func TestCostRatios(t *testing.T) {
	sess := func(mode string, base, sw []CallCost) *SessionResult {
		return &SessionResult{Mode: mode, Kind: spec.KindFar, CostBase: costOf(base, 0.1), CostSwitch: costOf(sw, 0.1)}
	}
	// Native: append-only. rcm: the same S_base; in S_switch half the input.
	nat := []CallCost{{0, 100}, {100, 50}}
	rs := []*SessionResult{
		sess(spec.ModeNative, nat, []CallCost{{0, 1000}, {1000, 1000}}),
		sess(spec.ModeRCM, nat, []CallCost{{0, 500}, {500, 500}}),
		sess(spec.ModeNative, nat, nat),
		sess(spec.ModeRCM, []CallCost{{0, 100}, {0, 150}}, nat),
	}
	var ss []Summary
	for _, m := range []string{spec.ModeNative, spec.ModeRCM} {
		var all []*SessionResult
		for _, r := range rs {
			if r.Mode == m {
				all = append(all, r)
			}
		}
		s := Summary{Mode: m, Threshold: 0.8}
		s.setCosts(all, nil, all, 0.1)
		ss = append(ss, s)
	}
	costRatios(ss)
	n, r := ss[0], ss[1]
	if n.CostBase.Ratio != 1 || n.CostSwitch.Ratio != 1 {
		t.Errorf("native's ratios %v %v, want 1", n.CostBase.Ratio, n.CostSwitch.Ratio)
	}
	// S_base: native bills 2 x (100 + 50 + 10) = 320; rcm 160 + 250 = 410.
	if got := float64(r.CostBase.Ratio); math.Abs(got-410.0/320) > 1e-9 {
		t.Errorf("S_base ratio %v, want %v", got, 410.0/320)
	}
	// S_switch: native 1000 + 1000 + 100 + 160 = 2260; rcm 500 + 550 + 160 = 1210.
	if got := float64(r.CostSwitch.Ratio); math.Abs(got-1210.0/2260) > 1e-9 {
		t.Errorf("S_switch ratio %v, want %v", got, 1210.0/2260)
	}
	if r.Far.CostSwitch.Ratio != r.CostSwitch.Ratio || !math.IsNaN(float64(r.Near.CostBase.Ratio)) {
		t.Errorf("far %v, near %v", r.Far.CostSwitch.Ratio, r.Near.CostBase.Ratio)
	}
}

func TestCallContext(t *testing.T) {
	body := []byte(`{"model":"m","messages":[1,2],"tools":[]}`)
	off := strings.Index(string(body), "[1,2]")
	if got := string(callContext(body, off, 5)); got != `{"model":"m","messages":,"tools":[]}[1,2]` {
		t.Errorf("callContext = %s", got)
	}
	if got := callContext(body, 0, 0); string(got) != string(body) {
		t.Errorf("no messages: %s", got)
	}
}
