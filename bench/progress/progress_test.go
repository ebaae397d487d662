package progress

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBarPlain: off a terminal, one line per tenth of the way and one at
// the end, in the labels' words, with an ETA from the rate so far.
func TestBarPlain(t *testing.T) {
	start := time.Unix(1000, 0)
	cases := []struct {
		labels Labels
		want   []string
	}{
		{ReplayLabels, []string{
			"replay:  25%  10/40 calls  0/2 sessions  ETA 30s",
			"replay:  50%  20/40 calls  1/2 sessions  ETA 20s",
			"replay: 100%  40/40 calls  2/2 sessions  ETA 0s",
		}},
		{RunLabels, []string{
			"run:  25%  10/40 requests  0/2 runs  ETA 30s",
			"run:  50%  20/40 requests  1/2 runs  ETA 20s",
			"run: 100%  40/40 requests  2/2 runs  ETA 0s",
		}},
	}
	for _, c := range cases {
		var out strings.Builder
		b := NewBar(&out, c.labels)
		clock := start
		b.now = func() time.Time { return clock }
		for _, p := range []struct {
			calls, sessions int
			at              time.Duration
		}{{10, 0, 10 * time.Second}, {11, 0, 11 * time.Second}, {20, 1, 20 * time.Second}, {40, 1, 40 * time.Second}, {40, 2, 40 * time.Second}, {40, 2, 41 * time.Second}} {
			clock = start.Add(p.at)
			b.Update(Progress{Calls: p.calls, TotalCalls: 40, Sessions: p.sessions, TotalSessions: 2, Started: start})
		}
		b.Done()
		// 40/40 calls with a session still open is the tenth step but not
		// the end; the end line follows once the last session finishes.
		want := []string{c.want[0], c.want[1], strings.Replace(c.want[2], "2/2", "1/2", 1), c.want[2]}
		if got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s lines:\n%s\nwant:\n%s", c.labels.Name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestBarTerminal: on a terminal the bar is redrawn in place, at most every
// 100 ms, and always at the end.
func TestBarTerminal(t *testing.T) {
	var out strings.Builder
	b := NewBar(&out, RunLabels)
	b.tty = true
	start := time.Unix(1000, 0)
	clock := start
	b.now = func() time.Time { return clock }
	for i, at := range []time.Duration{time.Second, time.Second + 50*time.Millisecond, 2 * time.Second, 2*time.Second + time.Millisecond} {
		clock = start.Add(at)
		b.Update(Progress{Calls: 2 + 2*i, TotalCalls: 8, Sessions: i / 3, TotalSessions: 1, Started: start})
	}
	b.Done()
	got := out.String()
	if n := strings.Count(got, "\r"); n != 3 {
		t.Errorf("%d redraws, want 3 (one throttled):\n%q", n, got)
	}
	if !strings.Contains(got, "\r[=======                       ]  25%  2/8 requests  0/1 runs  ETA 3s   ") ||
		!strings.HasSuffix(got, "100%  8/8 requests  1/1 runs  ETA 0s   \n") {
		t.Errorf("bar:\n%q", got)
	}
}

// TestParallel: every index runs once on the workers; once ctx ends no
// new index is handed out and parallel returns after those under way.
func TestParallel(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	Parallel(t.Context(), 3, 50, func(i int) {
		mu.Lock()
		seen[i]++
		mu.Unlock()
	})
	for i := range 50 {
		if seen[i] != 1 {
			t.Fatalf("index %d ran %d times", i, seen[i])
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	ran := 0
	Parallel(ctx, 1, 50, func(i int) {
		ran++
		if i == 4 {
			cancel()
		}
	})
	if ran < 5 || ran > 6 {
		t.Errorf("%d ran after a cancel at the fifth, want 5 (or 6 if one was already handed out)", ran)
	}
	tr := NewTracker(4, 2, nil)
	tr.Add(1, 0)
	tr.Add(3, 2)
	if tr.prog.Calls != 4 || tr.prog.Sessions != 2 {
		t.Errorf("tracker %+v", tr.prog)
	}
}
