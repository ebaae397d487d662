package memory

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/transcript"
	bolt "go.etcd.io/bbolt"
)

// The proxy writes within one transaction per call (Tx) and reads frozen
// messages for several turns at once; the tests write and read one thing
// at a time through these.

func (s *Store) touch(id, parent string, now time.Time) error {
	return s.Update(func(w *Tx) error { return w.Touch(id, parent, now) })
}

func (s *Store) appendEvent(session string, e Event) error {
	return s.Update(func(w *Tx) error { return w.AppendEvent(session, &e) })
}

func (s *Store) putLabels(session string, fps []transcript.Fingerprint, labels []Label) error {
	return s.Update(func(w *Tx) error { return w.PutLabels(session, fps, labels) })
}

func (s *Store) putFrozen(session, task string, fp transcript.Fingerprint, msg []byte) error {
	return s.Update(func(w *Tx) error { return w.PutFrozen(session, task, fp, msg) })
}

func (s *Store) putTask(session string, t Task) error {
	return s.Update(func(w *Tx) error { return w.PutTask(session, t) })
}

// putRecord stores r as the record of r.Task in session, replacing what was
// there; its Version becomes the stored one's plus one.
func (s *Store) putRecord(session string, r Record) error {
	return s.UpdateRecord(session, r.Task, func(old *Record) error {
		r.Version = old.Version
		*old = r
		return nil
	})
}

// frozen is FrozenAt for one turn.
func (s *Store) frozen(session, task string, fp transcript.Fingerprint) ([]byte, bool, error) {
	msgs, found, err := s.FrozenAt(session, task, []transcript.Fingerprint{fp})
	return msgs[0], found[0], err
}

// TestUpdateGathersOnlyWhenConcurrent: an update alone commits at once; updates
// made while another commits gather into one commit. The window is an hour
// here, so only a full group (10) commits.
func TestUpdateGathersOnlyWhenConcurrent(t *testing.T) {
	s := openTest(t, Options{})
	s.commits.window, s.commits.max = time.Hour, 10
	if err := s.Update(func(w *Tx) error { return w.Touch("ses_alone", "", time.Now()) }); err != nil {
		t.Fatal(err)
	}
	hold, held := make(chan struct{}), make(chan struct{})
	first := s.Queue(func(*Tx) error { close(held); <-hold; return nil })
	<-held
	ids := make(chan int, 20)
	var waits []func() error
	for i := range 10 {
		waits = append(waits, s.Queue(func(w *Tx) error {
			ids <- w.w.(boltWriter).tx.ID()
			return w.Touch(fmt.Sprintf("ses_%d", i), "", time.Now())
		}))
	}
	close(hold)
	if err := first(); err != nil {
		t.Fatal(err)
	}
	for _, wait := range waits {
		if err := wait(); err != nil {
			t.Fatal(err)
		}
	}
	close(ids)
	seen := map[int]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != 1 {
		t.Fatalf("10 concurrent updates took %d commits, want 1", len(seen))
	}
}

// TestQueueCommitsInOrder: writes commit in the order they were queued,
// within a commit and across commits; the window ends
// a group that is not full.
func TestQueueCommitsInOrder(t *testing.T) {
	s := openTest(t, Options{})
	s.commits.window, s.commits.max = time.Millisecond, 7
	var mu sync.Mutex
	var ran []int // the order the writes ran in, last run kept
	var tx []int  // the transaction of each
	var waits []func() error
	for i := range 50 {
		waits = append(waits, s.Queue(func(w *Tx) error {
			mu.Lock()
			defer mu.Unlock()
			ran, tx = append(ran, i), append(tx, w.w.(boltWriter).tx.ID())
			return w.Touch("ses_order", "", time.Now())
		}))
		if i%10 == 0 {
			runtime.Gosched()
		}
	}
	for _, wait := range waits {
		if err := wait(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range ran {
		if ran[i] != i || i > 0 && tx[i] < tx[i-1] {
			t.Fatalf("write %d ran %dth in transaction %d: order %v", ran[i], i, tx[i], ran)
		}
	}
	sess, _, err := s.Session("ses_order")
	if err != nil || sess.Calls != 50 {
		t.Fatalf("session %+v, %v: want 50 calls", sess, err)
	}
	if tx[0] == tx[len(tx)-1] {
		t.Fatal("50 writes in one commit: groups of 7 at most")
	}
}

// TestQueueLeavesOutAFailedWrite: a write that fails or panics leaves its
// commit without its changes; the writes beside it still commit, and its
// caller gets its error or panic.
func TestQueueLeavesOutAFailedWrite(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		s.commits.window, s.commits.max = time.Hour, 4
		hold, held := make(chan struct{}), make(chan struct{})
		first := s.Queue(func(*Tx) error { close(held); <-hold; return nil })
		<-held
		bad := errors.New("bad write")
		touch := func(id string) func(*Tx) error {
			return func(w *Tx) error { return w.Touch(id, "", time.Now()) }
		}
		ok1 := s.Queue(touch("ses_ok1"))
		failed := s.Queue(func(w *Tx) error {
			if err := w.Touch("ses_failed", "", time.Now()); err != nil {
				return err
			}
			return bad
		})
		panics := s.Queue(func(w *Tx) error {
			if err := w.Touch("ses_panics", "", time.Now()); err != nil {
				return err
			}
			panic("boom")
		})
		ok2 := s.Queue(touch("ses_ok2"))
		close(hold)
		if err := first(); err != nil {
			t.Fatal(err)
		}
		if err := failed(); !errors.Is(err, bad) {
			t.Errorf("failed write returned %v", err)
		}
		func() {
			defer func() {
				if p := recover(); p != "boom" {
					t.Errorf("panicking write's wait recovered %v", p)
				}
			}()
			panics()
		}()
		for _, wait := range []func() error{ok1, ok2} {
			if err := wait(); err != nil {
				t.Fatal(err)
			}
		}
		for id, want := range map[string]bool{"ses_ok1": true, "ses_ok2": true, "ses_failed": false, "ses_panics": false} {
			if _, found, err := s.Session(id); err != nil || found != want {
				t.Errorf("session %s stored %v (%v), want %v", id, found, err, want)
			}
		}
	})
}

// TestQueueKeepsEachWritersOrder: writers queueing at once, each its own
// chain of writes (some failing), see every chain committed in order: each
// write finds the last successful write of its chain before it, and every
// successful write is stored.
func TestQueueKeepsEachWritersOrder(t *testing.T) {
	s := openTest(t, Options{})
	s.commits.window, s.commits.max = time.Millisecond, 16
	errFails := errors.New("fails")
	const writers, writes = 8, 150
	fails := func(i int) bool { return i%7 == 3 }
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			key := fmt.Appendf(nil, "chain_%d", g)
			var waits []func() error
			last := -1 // the last write of the chain that commits
			for i := range writes {
				want := last
				waits = append(waits, s.Queue(func(w *Tx) error {
					b, err := w.w.(boltWriter).tx.CreateBucketIfNotExists([]byte("test_chains"))
					if err != nil {
						return err
					}
					got := -1
					if v := b.Get(key); v != nil {
						fmt.Sscan(string(v), &got)
					}
					if got != want {
						return fmt.Errorf("write %d of chain %d found %d before it, want %d", i, g, got, want)
					}
					if fails(i) {
						return errFails
					}
					return b.Put(key, fmt.Append(nil, i))
				}))
				if !fails(i) {
					last = i
				}
				if i%25 == 0 { // sometimes wait, so that chains drift apart
					if err := waits[len(waits)-1](); err != nil && !errors.Is(err, errFails) {
						t.Error(err)
						return
					}
				}
			}
			for i, wait := range waits {
				if err := wait(); err != nil && !(fails(i) && errors.Is(err, errFails)) {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for g := range writers {
		if err := s.b.(*boltStore).db.View(func(tx *bolt.Tx) error {
			if v := string(tx.Bucket([]byte("test_chains")).Get(fmt.Appendf(nil, "chain_%d", g))); v != fmt.Sprint(writes-1) {
				t.Errorf("chain %d ends at %q, want %d", g, v, writes-1)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
