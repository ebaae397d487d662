package spec

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"testing"

	"github.com/rcm-dev/rcm/internal/chattest"
)

var update = flag.Bool("update", false, "rebuild pack/demo.json and memory's golden trajectories from shared/data")

// demoTasks are the demo pack's tasks: six django tasks with disjoint
// changed files, two near pairs (contrib/auth, db/models), so that near and
// far sessions can both be built.
var demoTasks = []string{
	"django__django-11099", // contrib/auth/validators.py
	"django__django-13551", // contrib/auth/tokens.py
	"django__django-11133", // http/response.py
	"django__django-11848", // utils/http.py
	"django__django-11964", // db/models/enums.py
	"django__django-13925", // db/models/base.py
}

const (
	demoSeed      = 1
	demoMaxOutput = 1200
)

// buildDemo makes the demo pack from shared/data.
func buildDemo(t *testing.T) []byte {
	t.Helper()
	tasks, _, err := ReadData(chattest.SharedData(t), FormatMiniSWE)
	if err != nil {
		t.Fatal(err)
	}
	tasks = slices.DeleteFunc(tasks, func(t Task) bool { return !slices.Contains(demoTasks, t.ID) })
	if len(tasks) != len(demoTasks) {
		t.Fatalf("found %d of the %d demo tasks", len(tasks), len(demoTasks))
	}
	for i := range tasks {
		trimOutputs(&tasks[i], demoMaxOutput)
	}
	spec, _, err := NewSpec("demo: six django tasks, mini-swe-agent trajectories", tasks, demoSeed)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(spec, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestDemoPack checks that the embedded pack is what the generator makes
// from shared/data (it is reproducible); with -update it rewrites it.
func TestDemoPack(t *testing.T) {
	b := buildDemo(t)
	if *update {
		if err := os.WriteFile("pack/demo.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(b, demoJSON) {
		t.Fatal("pack/demo.json differs from what shared/data gives: run go test ./bench/spec -run TestDemoPack -update")
	}
}

func TestDemo(t *testing.T) {
	if len(demoJSON) > 1<<20 {
		t.Errorf("demo pack is %d bytes, want well under 1 MB", len(demoJSON))
	}
	s, err := Demo()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tasks) != len(demoTasks) {
		t.Errorf("demo has %d tasks, want %d", len(s.Tasks), len(demoTasks))
	}
	kinds := map[string]int{}
	for _, ss := range s.Sessions {
		kinds[ss.Kind]++
		for _, sched := range []Schedule{ScheduleBase, ScheduleSwitch} {
			calls, err := s.Calls(ss.ID, sched)
			if err != nil {
				t.Fatalf("%s %s: %v", ss.ID, sched, err)
			}
			if len(calls) == 0 {
				t.Fatalf("%s %s: no calls", ss.ID, sched)
			}
		}
	}
	if kinds[KindNear] == 0 || kinds[KindFar] == 0 {
		t.Errorf("demo sessions by kind: %v, want both near and far", kinds)
	}
	if DemoAttribution() == "" {
		t.Error("no attribution")
	}
}
