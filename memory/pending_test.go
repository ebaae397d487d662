package memory

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/transcript"
)

// TestPendingReadsAsCommitted: a view with a transaction's writes pending
// reads what a view reads once they have committed, and reads the same
// again after the commit: labels (a routed label stays), tasks and records
// (a put replaces), the record redacted, frozen messages (a turn's first
// stays, each task keeps maxFrozen). Random stores and writes, seeded.
func TestPendingReadsAsCommitted(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		at := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.Local)
		fps := make([]transcript.Fingerprint, maxFrozen+16)
		for i := range fps {
			fps[i] = transcript.Fingerprint{byte(i), byte(i >> 8), 7}
		}
		tasks := []string{"t1", "t2", "t3"}
		const secret = "ghp_R2vL7pT1wN8cB4yH6dJ0fG5sAaUoPiXqVr5t"
		for seed := int64(0); seed < 100; seed++ {
			rng := rand.New(rand.NewSource(seed))
			session := fmt.Sprint("s", seed)
			label := func() Label {
				return Label{Task: tasks[rng.Intn(len(tasks))], Confidence: rng.Float64(), Method: "signal", Routed: rng.Intn(2) == 0, At: at.Add(time.Duration(rng.Intn(1000)))}
			}
			// What the store holds.
			err := s.Update(func(w *Tx) error {
				if err := w.PutTask("other", Task{ID: "t9", Created: at}); err != nil {
					return err
				}
				for i := rng.Intn(3); i < len(tasks); i++ {
					if err := w.PutTask(session, Task{ID: tasks[i], Created: at.Add(time.Duration(rng.Intn(3)) * time.Second)}); err != nil {
						return err
					}
					if err := w.UpdateRecord(session, tasks[i], func(r *Record) error {
						r.Workspace = fmt.Sprint("/w/", i)
						return nil
					}); err != nil {
						return err
					}
				}
				for range rng.Intn(20) {
					fp := fps[rng.Intn(len(fps))]
					if err := w.PutLabels(session, []transcript.Fingerprint{fp}, []Label{label()}); err != nil {
						return err
					}
				}
				for _, task := range tasks {
					// Up to maxFrozen turns and a few over: puts prune some.
					for _, i := range rng.Perm(len(fps))[:maxFrozen-8+rng.Intn(12)] {
						if err := w.PutFrozen(session, task, fps[i], []byte(fmt.Sprint("held ", rng.Int()))); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// One to three transactions' writes, each as a Pending (its record
			// read through the ones before, as the proxy reads it) and as the
			// transaction, committed in order.
			var ps []*Pending
			var txs []func(*Tx) error
			for range 1 + rng.Intn(3) {
				p := NewPending(session)
				var ops []func(w puts) error
				for range 1 + rng.Intn(6) {
					switch task, fp := tasks[rng.Intn(len(tasks))], fps[rng.Intn(len(fps))]; rng.Intn(3) {
					case 0:
						tk := Task{ID: task, Name: fmt.Sprint("named ", task, rng.Intn(9)), Created: at.Add(time.Duration(rng.Intn(3)) * time.Second)}
						ops = append(ops, func(w puts) error { return w.PutTask(session, tk) })
					case 1:
						l := label()
						ops = append(ops, func(w puts) error { return w.PutLabels(session, []transcript.Fingerprint{fp}, []Label{l}) })
					default:
						for range 1 + rng.Intn(maxFrozen/4) {
							fp, msg := fps[rng.Intn(len(fps))], []byte(fmt.Sprint("put ", rng.Int()))
							ops = append(ops, func(w puts) error { return w.PutFrozen(session, task, fp, msg) })
						}
					}
				}
				task := tasks[rng.Intn(len(tasks))]
				var rec Record
				if err := s.ViewWith(ps, func(v *View) (err error) {
					rec, _, err = v.Record(session, task)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				rec.Task, rec.Summary, rec.Updated = task, fmt.Sprint("pushed with ", secret, " ", rng.Int()), at
				rec.Progress = append(rec.Progress, fmt.Sprint("step ", len(ps)))
				for _, op := range ops {
					if err := op(p); err != nil {
						t.Fatal(err)
					}
				}
				if err := p.PutRecord(session, rec); err != nil {
					t.Fatal(err)
				}
				ps = append(ps, p)
				txs = append(txs, func(w *Tx) error {
					if err := w.Commits(p); err != nil {
						return err
					}
					for _, op := range ops {
						if err := op(w); err != nil {
							return err
						}
					}
					return w.UpdateRecord(session, task, func(r *Record) error {
						if r.Version != rec.Version {
							return fmt.Errorf("record %s at version %d, read at %d", task, r.Version, rec.Version)
						}
						*r = rec
						return nil
					})
				})
			}

			// Read ahead before each commit and after the last.
			var got []reads
			for _, tx := range txs {
				got = append(got, readAll(t, s, ps, session, fps, tasks))
				if err := s.Update(tx); err != nil {
					t.Fatal(err)
				}
			}
			got = append(got, readAll(t, s, ps, session, fps, tasks))
			committed := readAll(t, s, nil, session, fps, tasks)
			for n, r := range got {
				g, c := reflect.ValueOf(r), reflect.ValueOf(committed)
				for i := range g.NumField() {
					if !reflect.DeepEqual(g.Field(i).Interface(), c.Field(i).Interface()) {
						t.Fatalf("seed %d: %d of %d committed, %s:\n%+v\ncommitted:\n%+v", seed, n, len(txs), g.Type().Field(i).Name, g.Field(i), c.Field(i))
					}
				}
			}
			if strings.Contains(fmt.Sprint(got[0]), secret) {
				t.Fatalf("seed %d: the pending record holds the secret", seed)
			}
		}
	})
}

// puts are the writes Tx and Pending both take.
type puts interface {
	PutTask(session string, t Task) error
	PutLabels(session string, fps []transcript.Fingerprint, labels []Label) error
	PutFrozen(session, task string, fp transcript.Fingerprint, msg []byte) error
}

// reads is everything a View reads of a session.
type reads struct {
	Labels  []Label
	Found   []bool
	Tasks   []Task
	Records []Record
	Record  []Record
	Frozen  map[string]map[transcript.Fingerprint]string
	Other   []Task
}

func readAll(t *testing.T, s *Store, ps []*Pending, session string, fps []transcript.Fingerprint, tasks []string) reads {
	t.Helper()
	var r reads
	err := s.ViewWith(ps, func(v *View) (err error) {
		if r.Labels, r.Found, err = v.Labels(session, fps); err != nil {
			return err
		}
		if r.Tasks, err = v.Tasks(session); err != nil {
			return err
		}
		if r.Records, err = v.Records(session); err != nil {
			return err
		}
		for _, task := range tasks {
			rec, _, err := v.Record(session, task)
			if err != nil {
				return err
			}
			r.Record = append(r.Record, rec)
		}
		f, err := v.Frozen(session, fps)
		if err != nil {
			return err
		}
		r.Frozen = map[string]map[transcript.Fingerprint]string{}
		for task, m := range f {
			for fp, msg := range m {
				if r.Frozen[task] == nil {
					r.Frozen[task] = map[transcript.Fingerprint]string{}
				}
				r.Frozen[task][fp] = string(msg)
			}
		}
		r.Other, err = v.Tasks("other")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPendingRejectsOtherSessions: a Pending holds one session's writes.
func TestPendingRejectsOtherSessions(t *testing.T) {
	p := NewPending("s1")
	if err := p.PutTask("s2", Task{ID: "t1"}); err == nil {
		t.Fatal("a task of another session was taken")
	}
	if err := p.PutRecord("s1", Record{}); err == nil {
		t.Fatal("a record without a task was taken")
	}
	if err := p.PutLabels("s1", []transcript.Fingerprint{{1}}, nil); err == nil {
		t.Fatal("labels of the wrong count were taken")
	}
}
