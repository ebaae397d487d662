package memory

import (
	"context"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/chattest"
)

// TestCommit: a call's Write lands in one transaction after the session's
// earlier writes, on either backend: its tasks, labels, frozen messages,
// the task's record with the call read into it, and its event; the same
// call again leaves the record
// as it is; and a record that changed after the call read it (a summary
// landed) keeps that change, with the call read into it.
func TestCommit(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		body := chattest.OpenCodeBody(t, chattest.User("In /work/ws1 fix the parser; keep the API"))
		tr := chattest.Parse(t, body)
		fps := tr.Fingerprints()
		reply := completion(t, chattest.Assistant("Fixed it."))
		write := func(rec *Record) *Write {
			return &Write{
				Session: "ses", At: time.Unix(1700000000, 0).UTC(),
				Tasks: []Task{{ID: "t1", Name: "fix the parser"}},
				Fps:   fps, Labels: []Label{{Task: "t1", Confidence: 1, Method: "tag", Routed: true}},
				Task:    "t1",
				Freeze:  []Freeze{{Fp: fps[0], Msg: []byte(`{"role":"user","content":"record"}`)}},
				Observe: &Observation{Transcript: tr, Turns: []int{0}, Response: reply, Status: 200},
				Record:  rec,
			}
		}
		commit := func(w *Write) (*Call, Event) {
			t.Helper()
			c, _, _ := s.Begin(ctx, "ses")
			var ev Event
			done := make(chan error, 1)
			c.Run(func() {
				var err error
				ev, err = c.Commit(w, func() Event { return Event{Kind: "agent", Mode: "rcm", Task: "t1"} })
				done <- err
			}, nil)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			<-c.Progress().Done
			return c, ev
		}
		_, ev := commit(write(nil))
		if ev.Seq == 0 {
			t.Fatalf("event %+v not numbered", ev)
		}
		rec, found, err := s.Record("ses", "t1")
		if err != nil || !found || len(rec.Requirements) != 1 || rec.Requirements[0].Text != "In /work/ws1 fix the parser; keep the API" {
			t.Fatalf("record %+v %v %v", rec, found, err)
		}
		labels, ok, err := s.Labels("ses", fps)
		if err != nil || !ok[0] || labels[0].Task != "t1" {
			t.Fatalf("labels %+v %v %v", labels, ok, err)
		}
		tasks, err := s.Tasks("ses")
		if err != nil || len(tasks) != 1 || tasks[0].Name != "fix the parser" {
			t.Fatalf("tasks %+v %v", tasks, err)
		}
		if msgs, ok, err := s.FrozenAt("ses", "t1", fps); err != nil || !ok[0] || string(msgs[0]) != `{"role":"user","content":"record"}` {
			t.Fatalf("frozen %q %v %v", msgs, ok, err)
		}

		// The same call again: the record is not rewritten.
		commit(write(nil))
		if again, _, _ := s.Record("ses", "t1"); again.Version != rec.Version {
			t.Fatalf("a repeated call rewrote the record: version %d, was %d", again.Version, rec.Version)
		}

		// A summary lands after the call read the record: the call is read
		// into the stored one, which keeps the summary.
		stale := rec
		if err := s.UpdateRecord("ses", "t1", func(r *Record) error { r.Summary = "halfway"; return nil }); err != nil {
			t.Fatal(err)
		}
		next := chattest.OpenCodeBody(t, chattest.User("In /work/ws1 fix the parser; keep the API"), chattest.Assistant("Fixed it."), chattest.User("Also handle empty input"))
		ntr := chattest.Parse(t, next)
		w := write(&stale)
		w.Fps, w.Labels = ntr.Fingerprints()[1:], []Label{{Task: "t1", Confidence: 1, Method: "tag", Routed: true}}
		w.Freeze = nil
		w.Observe = &Observation{Transcript: ntr, Turns: []int{0, 1}, Response: reply, Status: 200}
		commit(w)
		got, _, _ := s.Record("ses", "t1")
		if got.Summary != "halfway" || len(got.Requirements) != 2 {
			t.Fatalf("record after a summary landed: summary %q, %d requirements, want the summary kept and both requests", got.Summary, len(got.Requirements))
		}
	})
}
