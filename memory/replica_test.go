package memory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

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
	// lock, a moment after the close (longer on a loaded machine: ask
	// again, for at most 10 s).
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if _, _, outcome = b.Claim(ctx, "ses", 200*time.Millisecond); outcome == "" || outcome == "replica" {
			return
		}
	}
	t.Fatalf("claim of a closed store still waited for after 10 s: %q", outcome)
}

// TestFollowSeesOtherReplicasEvents: a store's Follow gets every event
// another store commits, not its own.
func TestFollowSeesOtherReplicasEvents(t *testing.T) {
	dsn := pgtest.Schema(t)
	a := pgReplica(t, dsn)
	b := pgReplica(t, dsn)
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

// TestClaimsCountFromOpen: a store holds its liveness lock once
// OpenPostgres returns, so that another replica waits for its very first
// claims (a replica's first calls once were not waited for); and a claim
// made while its store holds no lock (its listening connection down)
// still counts, for a bounded time.
func TestClaimsCountFromOpen(t *testing.T) {
	dsn := pgtest.Schema(t)
	a, b := pgReplica(t, dsn), pgReplica(t, dsn)
	if !a.b.(*pgStore).listening.Load() {
		t.Fatal("OpenPostgres returned before its store held its liveness lock")
	}
	ctx := context.Background()
	a.Claim(ctx, "ses", time.Second)
	if _, _, outcome := b.Claim(ctx, "ses", 100*time.Millisecond); outcome != "bound" {
		t.Fatalf("a claim made at once after open: the other replica's wait ended %q, want bound", outcome)
	}
	p := a.b.(*pgStore)
	pid := p.pid.Swap(0)
	a.Claim(ctx, "unwatched", time.Second)
	p.pid.Store(pid)
	if _, _, outcome := b.Claim(ctx, "unwatched", 100*time.Millisecond); outcome != "bound" {
		t.Fatalf("a claim made without a liveness lock: the other replica's wait ended %q, want bound", outcome)
	}
}

// TestSlowStatementIsNotAnOutage: a statement past its bound, or one
// whose caller left, fails alone; a failed connection marks the database
// down, so that calls meanwhile fail at once.
func TestSlowStatementIsNotAnOutage(t *testing.T) {
	p := pgReplica(t, pgtest.Schema(t)).b.(*pgStore)
	for _, err := range []error{context.DeadlineExceeded, fmt.Errorf("timeout: %w", context.DeadlineExceeded), context.Canceled} {
		if got := p.fail(err); errors.Is(got, ErrUnavailable) {
			t.Errorf("fail(%v) = %v, want it unchanged", err, got)
		}
		if err := p.check(); err != nil {
			t.Fatalf("after fail(%v) the store is marked down: %v", err, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := pgconn.Connect(ctx, "postgres://rcm@127.0.0.1:1/none?connect_timeout=1")
	if err == nil {
		t.Fatal("connected to port 1")
	}
	if got := p.fail(err); !errors.Is(got, ErrUnavailable) {
		t.Errorf("fail(%v) = %v, want ErrUnavailable", err, got)
	}
	if err := p.check(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("after a failed connection check() = %v, want ErrUnavailable", err)
	}
}
