package memory

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestTwoStoresOneSession: two stores on one PostgreSQL database (two
// replicas) write one session at once: every read-modify-write of its
// record, every call count and every event lands, none twice, the
// events numbered 1..n without a gap.
func TestTwoStoresOneSession(t *testing.T) {
	dsn := postgresSchema(t)
	var stores [2]*Store
	for i := range stores {
		s, err := OpenPostgres(dsn, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	const writers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				s := stores[(g+i)%2]
				errs <- s.Update(func(w *Tx) error {
					if err := w.Touch("ses", "", time.Now()); err != nil {
						return err
					}
					if err := w.UpdateRecord("ses", "t1", func(r *Record) error {
						n, _ := strconv.Atoi(r.Summary)
						r.Summary = strconv.Itoa(n + 1)
						return nil
					}); err != nil {
						return err
					}
					// Another session in the same transaction, in
					// either order: the locks never deadlock.
					other := fmt.Sprintf("ses_%d", (g+i)%3)
					if err := w.Touch(other, "", time.Now()); err != nil {
						return err
					}
					return w.AppendEvent("ses", &Event{Kind: "agent", Mode: "rcm"})
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
	n := writers * each
	r, _, err := stores[0].Record("ses", "t1")
	if err != nil || r.Summary != strconv.Itoa(n) || r.Version != n {
		t.Fatalf("record after %d updates: summary %q version %d (%v)", n, r.Summary, r.Version, err)
	}
	sess, _, err := stores[1].Session("ses")
	if err != nil || sess.Calls != n {
		t.Fatalf("session counted %d calls of %d (%v)", sess.Calls, n, err)
	}
	evs, err := stores[1].Events("ses", 0)
	if err != nil || len(evs) != n {
		t.Fatalf("%d events of %d (%v)", len(evs), n, err)
	}
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}
