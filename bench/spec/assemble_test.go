package spec

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chattest"
)

// swebenchTasks reads the real SWE-bench records as tasks without
// trajectories.
func swebenchTasks(t *testing.T) map[string]Task {
	t.Helper()
	insts, skips := ReadSWEBench(bytes.NewReader(chattest.ReadShared(t, "swebench-instances.jsonl")), "swebench")
	if len(skips) > 0 {
		t.Fatal(skips)
	}
	tasks := map[string]Task{}
	for _, in := range insts {
		tasks[in.InstanceID] = in.Task()
	}
	return tasks
}

func TestNearFarRealPatches(t *testing.T) {
	ts := swebenchTasks(t)
	cases := []struct {
		a, b           string
		disjoint, near bool
	}{
		{"django__django-13028", "django__django-13033", true, true},  // sql/query.py, sql/compiler.py
		{"django__django-13028", "django__django-13158", false, true}, // both sql/query.py
		{"django__django-11099", "django__django-13551", true, true},  // contrib/auth validators, tokens
		{"django__django-11099", "django__django-11133", true, false}, // contrib/auth vs http
		{"django__django-11815", "django__django-12125", false, true}, // both migrations/serializer.py
		{"sympy__sympy-13031", "sympy__sympy-13647", true, true},      // matrices/sparse.py, matrices/common.py
		{"sympy__sympy-13647", "sympy__sympy-17630", true, false},     // matrices vs matrices/expressions
	}
	for _, c := range cases {
		a, b := ts[c.a], ts[c.b]
		if Disjoint(&a, &b) != c.disjoint || Near(&a, &b) != c.near {
			t.Errorf("%s vs %s: disjoint %v near %v, want %v %v", c.a, c.b, Disjoint(&a, &b), Near(&a, &b), c.disjoint, c.near)
		}
	}
}

func TestAssembleReal(t *testing.T) {
	ts := swebenchTasks(t)
	var tasks []Task
	for _, task := range ts {
		tasks = append(tasks, task)
	}
	sessions, _ := Assemble(tasks, 42)
	if len(sessions) == 0 {
		t.Fatal("no sessions")
	}
	byID := map[string]*Task{}
	for i := range tasks {
		byID[tasks[i].ID] = &tasks[i]
	}
	kinds := map[string]int{}
	for _, s := range sessions {
		kinds[s.Kind]++
		a := byID[s.Focus]
		nearCount := 0
		for _, d := range s.Distractors {
			dt := byID[d]
			if dt.Repository != a.Repository || !Disjoint(a, dt) {
				t.Errorf("%s: distractor %s: same repository %v, disjoint %v", s.ID, d, dt.Repository == a.Repository, Disjoint(a, dt))
			}
			if Near(a, dt) {
				nearCount++
			}
		}
		if (s.Kind == KindNear) != (nearCount > 0) {
			t.Errorf("%s: kind %s with %d near distractors", s.ID, s.Kind, nearCount)
		}
		if !slices.Equal(project(s.Switch, s.Focus), s.Base) {
			t.Errorf("%s: projection differs", s.ID)
		}
	}
	if kinds[KindNear] == 0 || kinds[KindFar] == 0 {
		t.Errorf("kinds = %v, want both", kinds)
	}
	spec := &Spec{Version: Version, Tasks: tasks, Sessions: sessions}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	// Deterministic for a seed, and the seed matters.
	again, _ := Assemble(tasks, 42)
	other, _ := Assemble(tasks, 43)
	j := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	if j(again) != j(sessions) {
		t.Error("same seed, different sessions")
	}
	if j(other) == j(sessions) {
		t.Error("different seeds, same sessions")
	}
}

func TestSwitchSchedule(t *testing.T) {
	ts := swebenchTasks(t)
	a := ts["django__django-11133"] // has hints: issue, hints, submit
	ds := []*Task{}
	for _, id := range []string{"django__django-11099", "django__django-11179", "django__django-11848", "django__django-13551"} {
		d := ts[id]
		ds = append(ds, &d)
	}
	got := formatSteps(switchSchedule(&a, ds))
	want := "[django__django-11133#0 django__django-11099#0 django__django-11179#0 django__django-11848#0 django__django-13551#0 " +
		"django__django-11133#1 django__django-11179#1 django__django-11848#1 django__django-11133#2]"
	if got != want {
		t.Errorf("switch =\n %s\nwant\n %s", got, want)
	}
	if got := formatSteps(baseSchedule(&a)); got != "[django__django-11133#0 django__django-11133#1 django__django-11133#2]" {
		t.Errorf("base = %s", got)
	}
}

func TestProjectionRefused(t *testing.T) {
	ts := swebenchTasks(t)
	var tasks []Task
	for _, id := range []string{"django__django-11099", "django__django-11133", "django__django-11179", "django__django-11848", "django__django-13551"} {
		tasks = append(tasks, ts[id])
	}
	s, _, err := NewSpec("p", tasks, 1)
	if err != nil {
		t.Fatal(err)
	}
	ss := &s.Sessions[0]
	// Drop the focus task's first stage from S_switch: pi_A S_switch != S_base.
	ss.Switch = ss.Switch[1:]
	b, _ := json.Marshal(s)
	_, err = Parse(b)
	if err == nil || !strings.Contains(err.Error(), "session "+ss.ID+": projection: pi_"+ss.Focus+"(switch)") {
		t.Fatalf("Parse = %v, want the projection refused", err)
	}
}
