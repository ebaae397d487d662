package memory

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/transcript"
	bolt "go.etcd.io/bbolt"
)

var t0 = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)

func TestSessions(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		steps := []struct {
			id, parent string
			at         time.Time
		}{
			{"a", "", t0},
			{"b", "a", t0.Add(time.Minute)},
			{"a", "", t0.Add(2 * time.Minute)},
			{"b", "z", t0.Add(30 * time.Second)}, // late clock: Updated stays, parent kept
		}
		for _, st := range steps {
			if err := s.touch(st.id, st.parent, st.at); err != nil {
				t.Fatal(err)
			}
		}
		want := []Session{
			{ID: "a", Created: t0, Updated: t0.Add(2 * time.Minute), Calls: 2},
			{ID: "b", Parent: "a", Created: t0.Add(time.Minute), Updated: t0.Add(time.Minute), Calls: 2},
		}
		got, err := s.Sessions()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Sessions() = %+v\nwant %+v", got, want)
		}
		if sess, found, err := s.Session("b"); err != nil || !found || !reflect.DeepEqual(sess, want[1]) {
			t.Errorf("Session(b) = %+v %v %v", sess, found, err)
		}
		if _, found, err := s.Session("nope"); err != nil || found {
			t.Errorf("Session(nope): found %v, %v", found, err)
		}
		if err := s.touch("", "", t0); err == nil {
			t.Error("Touch with an empty id succeeded")
		}
	})
}

func TestTasks(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		tasks := []Task{
			{ID: "t2", Name: "fix parser", Created: t0.Add(time.Minute), Turns: 3},
			{ID: "t10", Name: "add flag", Created: t0, Turns: 1},
			{ID: "t1", Name: "docs", Created: t0.Add(time.Minute)},
		}
		for _, task := range tasks {
			if err := s.putTask("s", task); err != nil {
				t.Fatal(err)
			}
		}
		tasks[1].Turns = 4
		if err := s.putTask("s", tasks[1]); err != nil {
			t.Fatal(err)
		}
		got, err := s.Tasks("s")
		if err != nil {
			t.Fatal(err)
		}
		if want := []Task{tasks[1], tasks[2], tasks[0]}; !reflect.DeepEqual(got, want) {
			t.Errorf("Tasks() = %+v\nwant %+v", got, want)
		}
		if got, err := s.Tasks("other"); err != nil || len(got) != 0 {
			t.Errorf("Tasks(other) = %+v %v", got, err)
		}
		if err := s.putTask("s", Task{}); err == nil {
			t.Error("PutTask without an id succeeded")
		}
	})
}

func TestRecords(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		exit0, exit1 := 0, 1
		r := Record{
			Task: "t1",
			Requirements: []Requirement{
				{Text: "Fix the off-by-one in parse.go", Turn: fp(1).String()},
				{Text: "Also keep the old API", Turn: fp(4).String(), Amends: true},
			},
			Workspace:    "/work/ws1",
			FilesRead:    []string{"parse.go"},
			FilesChanged: []string{"parse.go", "parse_test.go"},
			Commands:     []Command{{Cmd: "go build ./..."}, {Cmd: "go test ./...", Exit: &exit1}},
			LastTest:     &TestRun{Command: Command{Cmd: "go test ./...", Exit: &exit1}, Outcome: "failed"},
			Progress:     []string{"found the bug"},
			Unfinished:   []string{"make the test pass"},
			Summary:      "half way",
			Updated:      t0,
		}
		if err := s.putRecord("s", r); err != nil {
			t.Fatal(err)
		}
		got, found, err := s.Record("s", "t1")
		want := r
		want.Version = 1
		if err != nil || !found || !reflect.DeepEqual(got, want) {
			t.Fatalf("Record = %+v %v %v\nwant %+v", got, found, err, want)
		}
		err = s.UpdateRecord("s", "t1", func(r *Record) error {
			r.LastTest = &TestRun{Command: Command{Cmd: "go test ./...", Exit: &exit0}, Outcome: "passed"}
			r.Unfinished = nil
			r.Version = 100 // ignored: the store counts
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, _, _ = s.Record("s", "t1")
		if got.Version != 2 || got.LastTest.Outcome != "passed" || *got.LastTest.Exit != 0 || got.Unfinished != nil || len(got.Requirements) != 2 {
			t.Errorf("after update: %+v", got)
		}
		// A failing update changes nothing.
		if err := s.UpdateRecord("s", "t1", func(r *Record) error {
			r.Summary = "lost"
			return fmt.Errorf("extractor failed")
		}); err == nil || !strings.Contains(err.Error(), "extractor failed") {
			t.Errorf("failing update: %v", err)
		}
		if got, _, _ := s.Record("s", "t1"); got.Summary != "half way" || got.Version != 2 {
			t.Errorf("after failed update: %+v", got)
		}
		if err := s.putRecord("s", Record{Task: "t0"}); err != nil {
			t.Fatal(err)
		}
		all, err := s.Records("s")
		if err != nil || len(all) != 2 || all[0].Task != "t0" || all[1].Task != "t1" {
			t.Errorf("Records = %+v %v", all, err)
		}
		if _, found, err := s.Record("s", "none"); found || err != nil {
			t.Errorf("missing record: %v %v", found, err)
		}
		if err := s.putRecord("s", Record{}); err == nil {
			t.Error("PutRecord without a task succeeded")
		}
	})
}

func TestEventsTrimmed(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{MaxEvents: 5})
		for i := 1; i <= 12; i++ {
			if err := s.appendEvent("s", Event{At: t0.Add(time.Duration(i) * time.Second), Kind: "agent", Task: fmt.Sprint("t", i), TokensIn: i}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.appendEvent("other", Event{Task: "x"}); err != nil {
			t.Fatal(err)
		}
		all, err := s.Events("s", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 5 {
			t.Fatalf("%d events kept, want 5", len(all))
		}
		for i, e := range all {
			n := 8 + i
			if e.Seq != uint64(n) || e.TokensIn != n || !e.At.Equal(t0.Add(time.Duration(n)*time.Second)) {
				t.Errorf("event %d = %+v, want the %dth", i, e, n)
			}
		}
		last2, err := s.Events("s", 2)
		if err != nil || len(last2) != 2 || last2[0].Seq != 11 || last2[1].Seq != 12 {
			t.Errorf("Events(limit 2) = %+v %v", last2, err)
		}
		other, err := s.Events("other", 10)
		if err != nil || len(other) != 1 || other[0].Seq != 1 {
			t.Errorf("other session's events = %+v %v", other, err)
		}
		// The store itself holds no more than MaxEvents of them.
		all, err = s.Events("s", 0)
		if err != nil || len(all) != 5 {
			t.Errorf("the store holds %d events (%v), want 5", len(all), err)
		}
		if bs, ok := s.b.(*boltStore); ok {
			bs.db.View(func(tx *bolt.Tx) error {
				if n := (boltReader{tx}).sessionBucket("s", bucketEvents).Stats().KeyN; n != 5 {
					t.Errorf("events bucket holds %d keys", n)
				}
				return nil
			})
		}
	})
}

func TestCorruptValuesGiveErrors(t *testing.T) {
	s := openTest(t, Options{})
	if err := s.putRecord("s", Record{Task: "good", Summary: "fine"}); err != nil {
		t.Fatal(err)
	}
	if err := s.appendEvent("s", Event{Task: "good"}); err != nil {
		t.Fatal(err)
	}
	if err := s.touch("good", "", t0); err != nil {
		t.Fatal(err)
	}
	junk := []byte(`{"task": "bad", "version": "not a number`)
	putRaw(t, s, "s", bucketRecords, []byte("bad"), junk)
	putRaw(t, s, "s", bucketTasks, []byte("bad"), junk)
	putRaw(t, s, "s", bucketEvents, binary.BigEndian.AppendUint64(nil, 99), junk)
	s.b.(*boltStore).db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSessions).Put([]byte("bad"), junk) })

	checks := map[string]error{}
	_, _, checks["Record"] = s.Record("s", "bad")
	_, checks["Records"] = s.Records("s")
	_, checks["Tasks"] = s.Tasks("s")
	_, checks["Events"] = s.Events("s", 0)
	_, _, checks["Session"] = s.Session("bad")
	_, checks["Sessions"] = s.Sessions()
	checks["UpdateRecord"] = s.UpdateRecord("s", "bad", func(*Record) error { return nil })
	checks["Touch"] = s.touch("bad", "", t0)
	for op, err := range checks {
		if err == nil || !strings.Contains(err.Error(), `"bad"`) && !strings.Contains(err.Error(), "0000000000000063") {
			t.Errorf("%s: %v, want an error naming the bad key", op, err)
		}
	}
	// Everything else is intact.
	if r, found, err := s.Record("s", "good"); err != nil || !found || r.Summary != "fine" {
		t.Errorf("good record: %+v %v %v", r, found, err)
	}
	if e, err := s.Events("s", 1); err == nil {
		t.Errorf("newest event is the corrupt one, yet Events gave %+v", e)
	}
	if _, found, err := s.Session("good"); err != nil || !found {
		t.Errorf("good session: %v %v", found, err)
	}
	s.b.(*boltStore).db.View(func(tx *bolt.Tx) error {
		if (boltReader{tx}).sessionBucket("s", bucketRecords).Get([]byte("bad")) == nil {
			t.Error("the corrupt record was deleted")
		}
		return nil
	})
}

// TestConcurrentWriters writes from many goroutines at once, to distinct
// sessions and to one shared record, and checks that every write landed.
func TestConcurrentWriters(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		const writers, rounds = 8, 10
		var wg sync.WaitGroup
		errs := make(chan error, writers*rounds*5)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				session := fmt.Sprint("session-", w)
				for i := range rounds {
					errs <- s.touch(session, "", t0.Add(time.Duration(i)*time.Second))
					errs <- s.putLabels(session, []transcript.Fingerprint{fp(i)}, []Label{{Task: session, Routed: true}})
					errs <- s.appendEvent(session, Event{TokensIn: i})
					errs <- s.UpdateRecord(session, "t", func(r *Record) error {
						r.Progress = append(r.Progress, fmt.Sprint(i))
						return nil
					})
					errs <- s.UpdateRecord("shared", "t", func(r *Record) error {
						r.Progress = append(r.Progress, session)
						return nil
					})
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		fps := make([]transcript.Fingerprint, rounds)
		for i := range fps {
			fps[i] = fp(i)
		}
		for w := range writers {
			session := fmt.Sprint("session-", w)
			if sess, _, err := s.Session(session); err != nil || sess.Calls != rounds {
				t.Errorf("%s: %+v %v", session, sess, err)
			}
			labels, found, err := s.Labels(session, fps)
			if err != nil {
				t.Fatal(err)
			}
			for i := range fps {
				if !found[i] || labels[i].Task != session {
					t.Errorf("%s turn %d: %+v %v", session, i, labels[i], found[i])
				}
			}
			if ev, err := s.Events(session, 0); err != nil || len(ev) != rounds {
				t.Errorf("%s: %d events, %v", session, len(ev), err)
			}
			if r, _, err := s.Record(session, "t"); err != nil || len(r.Progress) != rounds || r.Version != rounds {
				t.Errorf("%s record: %+v %v", session, r, err)
			}
		}
		if r, _, err := s.Record("shared", "t"); err != nil || len(r.Progress) != writers*rounds || r.Version != writers*rounds {
			t.Errorf("shared record: %d updates, version %d, %v; want %d", len(r.Progress), r.Version, err, writers*rounds)
		}
	})
}
