package memory

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/transcript"
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
// made while another holds the writer gather into one commit. The batch
// window is an hour here, so only a full batch (10) runs through it.
func TestUpdateGathersOnlyWhenConcurrent(t *testing.T) {
	s := openTest(t, Options{})
	s.db.MaxBatchDelay, s.db.MaxBatchSize = time.Hour, 10
	if err := s.Update(func(w *Tx) error { return w.Touch("ses_alone", "", time.Now()) }); err != nil {
		t.Fatal(err)
	}
	hold, held := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.Update(func(*Tx) error { close(held); <-hold; return nil })
	}()
	<-held
	ids := make(chan int, 20)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			if err := s.Update(func(w *Tx) error {
				ids <- w.tx.ID()
				return w.Touch(fmt.Sprintf("ses_%d", i), "", time.Now())
			}); err != nil {
				t.Error(err)
			}
		})
	}
	for s.updates.Load() < 11 { // every one has chosen the batch
		runtime.Gosched()
	}
	close(hold)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
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
