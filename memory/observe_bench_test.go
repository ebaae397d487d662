package memory

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
)

// interleaved builds one session body from real trajectories: turn i is a
// request of task i%len(trajs) followed by that trajectory's messages, with
// tool-call ids repeating across turns (as they may), until the body holds
// at least size bytes. It returns the body and the turns of task 0.
func interleaved(t testing.TB, size int, trajs ...*chat.Trajectory) ([]byte, []int) {
	t.Helper()
	ms := []chat.Message{{Role: chat.RoleSystem, Content: "You are opencode."}}
	var turns []int
	n := 0
	for i := 0; n < size; i++ {
		tr := trajs[i%len(trajs)]
		ms = append(ms, chat.Message{Role: chat.RoleUser, Content: fmt.Sprintf("Request %d of %s: %s", i, tr.Task, tr.Turns[0].Request)})
		ms = append(ms, tr.Turns[0].Messages...)
		if i%len(trajs) == 0 {
			turns = append(turns, i)
		}
		n = 0
		for _, m := range ms {
			n += len(m.Content) + 100
		}
	}
	return chattest.Body(ms...), turns
}

// TestObserveInterleaved: only the task's own turns feed its record, and the
// record stays bounded however many turns the task has.
func TestObserveInterleaved(t *testing.T) {
	a, b := miniSWE(t, "django__django-11099"), miniSWE(t, "sympy__sympy-13480")
	body, turns := interleaved(t, 1<<20, a, b)
	tr := chattest.Parse(t, body)
	var r Record
	r.Observe(Observation{Transcript: tr, Turns: turns})
	if len(r.Requirements) != len(turns) {
		t.Fatalf("%d requirements for %d turns", len(r.Requirements), len(turns))
	}
	for i, q := range r.Requirements {
		if !strings.HasPrefix(q.Text, fmt.Sprintf("Request %d of django__django-11099: ", 2*i)) {
			t.Fatalf("requirement %d is %.60q", i, q.Text)
		}
	}
	for _, f := range slices.Concat(r.FilesRead, r.FilesChanged) {
		if strings.Contains(f, "sympy") {
			t.Errorf("file %s of the other task in the record", f)
		}
	}
	reqs := 0
	for _, q := range r.Requirements {
		reqs += len(q.Text) + 100
	}
	size := len(mustJSON(t, r))
	t.Logf("%d turns, transcript %d bytes: record %d bytes (%d of them requirements)", len(turns), len(body), size, reqs)
	if size-reqs > 32<<10 {
		t.Errorf("record beyond its requirements is %d bytes", size-reqs)
	}
}

// BenchmarkObserve measures Observe on a 1 MB transcript of two interleaved
// real tasks: "cold" reads every turn of the task (a record seen for the
// first time), "steady" is the usual case of a record that already covers
// the earlier turns. The reported record-bytes shows its size. "long-turn"
// is the steady case on one turn of 250 bash steps with 4 KB outputs (an
// agent working through a long request): the turn is read again on each of
// its calls.
func BenchmarkObserve(b *testing.B) {
	ta, tb := miniSWE(b, "django__django-11099"), miniSWE(b, "sympy__sympy-13480")
	body, turns := interleaved(b, 1<<20, ta, tb)
	tr := chattest.Parse(b, body)
	reply := sseReply("Done with this step.")
	obs := Observation{Transcript: tr, Turns: turns, Response: reply, SSE: true, Status: 200}
	b.Run("cold", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		var r Record
		for b.Loop() {
			r = Record{}
			r.Observe(obs)
		}
		b.ReportMetric(float64(len(mustJSON(b, r))), "record-bytes")
	})
	b.Run("steady", func(b *testing.B) { steady(b, obs, len(body)) })
	b.Run("long-turn", func(b *testing.B) {
		body := chattest.Body(longTurn(250, 4<<10)...)
		obs := Observation{Transcript: chattest.Parse(b, body), Turns: []int{0}, Response: reply, SSE: true, Status: 200}
		steady(b, obs, len(body))
	})
}

// steady measures Observe reading obs again into a record that has read it
// once.
func steady(b *testing.B, obs Observation, size int) {
	var warm Record
	warm.Observe(obs)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		r := warm
		r.Observe(obs)
	}
}
