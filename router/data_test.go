package router

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// The four real single-task sessions must stay one task at every call.
func TestSWETogetherStaysOneTask(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(needData(t, "sessions/swe-together"), "*.json"))
	if len(files) == 0 {
		t.Skip("no swe-together sessions")
	}
	r := mustNew(t, Config{})
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ms := sweTogether(t, f)
			b := newBody("You are a coding agent.")
			b.add(ms...)
			st := store{}
			calls, requests := 0, 0
			for n := 2; n <= len(b.msgs); n++ {
				if n < len(b.msgs) && ms[n-1].Role != "assistant" {
					continue // the harness calls the model when the next message is the assistant's
				}
				_, p := st.route(t, r, b.bytes(n), Options{})
				calls++
				for i, d := range p.Turns {
					if d.Task != "t1" {
						t.Fatalf("call %d: turn %d labelled %q (%s, %.2f): a false switch", calls, i, d.Task, d.Method, d.Confidence)
					}
				}
				if p.Fallback {
					t.Errorf("call %d: fallback on a single-task session (%s %.2f)", calls, p.Current.Method, p.Current.Confidence)
				}
				requests = len(p.Turns)
			}
			t.Logf("%d calls, %d request turns, all on t1", calls, requests)
		})
	}
}

// metrics of a replay of interleaved sessions.
type metrics struct {
	calls, right, fallback, routed, routedRight int
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
	fmt.Fprintf(&b, "calls %d: accuracy %.4f, fallback %.4f, routed precision %.4f; turns %d: final-label accuracy %.4f\n",
		m.calls, frac(m.right, m.calls), frac(m.fallback, m.calls), frac(m.routedRight, m.routed),
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

// replay runs every call of the interleaved sessions through the router (a
// call per model request: the turn's request, then after each tool result)
// and scores the current turn's decision against the schedule.
func replay(t *testing.T, sessions [][]swTask, thr float64) *metrics {
	r := mustNew(t, Config{Threshold: thr})
	m := &metrics{methods: map[string][2]int{}}
	for _, tasks := range sessions {
		turns, truth := schedule(tasks)
		b := newBody("You are a coding agent.")
		st := store{}
		var final []Decision
		for ti, turn := range turns {
			want := fmt.Sprintf("t%d", truth[ti]+1)
			for k, mm := range turn {
				b.add(mm)
				if k < len(turn)-1 && turn[k+1].Role == "tool" {
					continue // the call comes after the tool result
				}
				_, p := st.route(t, r, b.bytes(len(b.msgs)), Options{})
				if len(p.Turns) != ti+1 {
					t.Fatalf("turn %d: transcript has %d turns", ti, len(p.Turns))
				}
				m.observe(p.Current.Confidence, p.Current.Task == want, p.Fallback, p.Current.Method)
				final = p.Turns
				if !p.Fallback {
					checkKeep(t, p, truth[:ti+1])
				}
			}
		}
		for ti, d := range final {
			m.turns++
			if d.Task == fmt.Sprintf("t%d", truth[ti]+1) {
				m.turnsRight++
			}
		}
	}
	return m
}

// checkKeep: a routed plan keeps the current task's routed turns and the
// current turn.
func checkKeep(t *testing.T, p Plan, truth []int) {
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

func TestInterleaved(t *testing.T) {
	for _, v := range []struct {
		name    string
		workdir bool
		// floors at threshold 0.8
		accuracy, fallback, precision float64
	}{
		{"workdir", true, 0.98, 0.10, 0.95},
		{"bare", false, 0.90, 0.10, 0.93},
	} {
		t.Run(v.name, func(t *testing.T) {
			sessions := interleavedSessions(t, v.workdir)
			m := replay(t, sessions, 0.8)
			t.Logf("%d sessions, threshold 0.8:\n%s", len(sessions), m)
			if got := frac(m.right, m.calls); got < v.accuracy {
				t.Errorf("accuracy %.4f < %.2f", got, v.accuracy)
			}
			if got := frac(m.fallback, m.calls); got > v.fallback {
				t.Errorf("fallback %.4f > %.2f", got, v.fallback)
			}
			if got := frac(m.routedRight, m.routed); got < v.precision {
				t.Errorf("routed precision %.4f < %.2f", got, v.precision)
			}
		})
	}
}
