package memory

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/pgtest"
)

// TestTwoStoresOneSession: two stores on one PostgreSQL database (two
// replicas) write one session at once: every read-modify-write of its
// record, every call count and every event lands, none twice, the
// events numbered 1..n without a gap.
func TestTwoStoresOneSession(t *testing.T) {
	dsn := pgtest.Schema(t)
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

// TestClaimWaitsForOtherReplica: a call claimed on one store makes the
// session's next call on another wait until its writes commit (Release
// in their transaction); a claim of a store that is gone (closed: its
// liveness lock released) is not waited for; a store's own claims never
// make its calls wait (it orders them itself).
func TestClaimWaitsForOtherReplica(t *testing.T) {
	dsn := pgtest.Schema(t)
	a, err := OpenPostgres(dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := pgReplica(t, dsn)
	waitLive(t, a, b)
	ctx := context.Background()
	c1, _, outcome := a.Claim(ctx, "ses", time.Second)
	if outcome != "" {
		t.Fatalf("first claim waited: %q", outcome)
	}
	c2, _, outcome := a.Claim(ctx, "ses", time.Second)
	if outcome != "" {
		t.Fatalf("a store waited for its own claim: %q", outcome)
	}
	a.Release(c2) // a call that writes nothing
	go func() {
		time.Sleep(100 * time.Millisecond)
		a.Update(func(w *Tx) error {
			if err := w.Touch("ses", "", time.Now()); err != nil {
				return err
			}
			return w.Release(c1)
		})
	}()
	_, d, outcome := b.Claim(ctx, "ses", 5*time.Second)
	if outcome != "replica" || d < 80*time.Millisecond {
		t.Fatalf("claim on the other replica: %q after %v, want replica after about 100ms", outcome, d)
	}
	if _, found, _ := b.Session("ses"); !found {
		t.Fatal("the wait ended before the write it waited for")
	}
	// A claim left open: bounded.
	a.Claim(ctx, "ses", time.Second)
	if _, d, outcome := b.Claim(ctx, "ses", 200*time.Millisecond); outcome != "bound" || d < 200*time.Millisecond {
		t.Fatalf("open claim: %q after %v, want bound", outcome, d)
	}
	a.Close()
	// The server ends the closed connection's backend, and with it its
	// lock, a moment after the close.
	if _, d, outcome := b.Claim(ctx, "ses", time.Second); outcome != "" && outcome != "replica" || d > 500*time.Millisecond {
		t.Fatalf("claim of a closed store still waited for: %q after %v", outcome, d)
	}
}

// TestFollowSeesOtherReplicasEvents: a store's Follow gets every event
// another store commits, not its own.
func TestFollowSeesOtherReplicasEvents(t *testing.T) {
	dsn := pgtest.Schema(t)
	a := pgReplica(t, dsn)
	b := pgReplica(t, dsn)
	waitLive(t, a, b)
	got := make(chan string, 10)
	b.Follow(func(session string, e Event) { got <- fmt.Sprintf("%s %d %s", session, e.Seq, e.Task) })
	for _, s := range []*Store{a, b, a} {
		if err := s.Update(func(w *Tx) error { return w.AppendEvent("ses", &Event{Task: "t1"}) }); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"ses 1 t1", "ses 3 t1"} {
		select {
		case g := <-got:
			if g != want {
				t.Fatalf("followed %q, want %q", g, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no event followed, want %q", want)
		}
	}
	select {
	case g := <-got:
		t.Fatalf("followed its own event too: %q", g)
	case <-time.After(200 * time.Millisecond):
	}
}

// pgReplica opens one more store on dsn, closed after the test.
func pgReplica(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := OpenPostgres(dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitLive waits until each store holds its liveness lock and listens.
func waitLive(t *testing.T, ss ...*Store) {
	t.Helper()
	for _, s := range ss {
		deadline := time.Now().Add(5 * time.Second)
		for !s.b.(*pgStore).listening.Load() {
			if time.Now().After(deadline) {
				t.Fatal("store never listened")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
