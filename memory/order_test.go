package memory

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestPendingOrdersWritesPerSession(t *testing.T) {
	var p order
	var order []int
	step := make(chan struct{})
	first := p.begin("s")
	second := p.begin("s")
	other := p.begin("o")
	second.run(func() { order = append(order, 2) }, nil)
	other.run(func() {}, nil) // another session does not wait for s
	waited := make(chan struct{})
	go func() { p.wait(context.Background(), "s"); close(waited) }()
	select {
	case <-waited:
		t.Fatal("wait returned while the session's writes were pending")
	case <-time.After(20 * time.Millisecond):
	}
	first.run(func() { <-step; order = append(order, 1) }, nil)
	close(step)
	<-waited
	if len(order) != 2 || order[0] != 1 || order[1] != 2 {
		t.Fatalf("writes ran in order %v", order)
	}
	p.wait(context.Background(), "o")
	if len(p.last) != 0 {
		t.Fatalf("slots left behind: %v", p.last)
	}
	// A cancelled caller stops waiting.
	stuck := p.begin("s")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.wait(ctx, "s")
	stuck.run(func() {}, nil)
}

// TestPendingSettles: a call's writes hold off after its answer, and a call
// of the same session that waits for them ends that delay, for the writes
// of earlier calls still queued too.
func TestPendingSettles(t *testing.T) {
	p := order{settle: time.Hour}
	ran := make(chan int, 2)
	first, second := p.begin("s"), p.begin("s")
	first.run(func() { ran <- 1 }, nil)
	second.run(func() { ran <- 2 }, nil)
	select {
	case n := <-ran:
		t.Fatalf("write %d ran during its settle delay", n)
	case <-time.After(50 * time.Millisecond):
	}
	if _, _, outcome := p.wait(context.Background(), "s"); outcome != "done" {
		t.Fatalf("wait ended %q, want done: the delay held", outcome)
	}
	if a, b := <-ran, <-ran; a != 1 || b != 2 {
		t.Fatalf("writes ran in order %d %d", a, b)
	}
}

// TestPendingReadsAhead: a call waits for what the session's latest writes
// will store, not for their commit, and reads that; writes that cannot be
// read ahead are waited for.
func TestPendingReadsAhead(t *testing.T) {
	var p order
	commit := make(chan struct{})
	want := &ahead{}
	s := p.begin("s")
	s.run(func() {
		s.publish(want)
		<-commit // the fsync
	}, nil)
	got, _, outcome := p.wait(context.Background(), "s")
	if got != want || outcome != "ahead" {
		t.Fatalf("wait gave %v, %q; want the published writes, ahead", got, outcome)
	}
	// The next call's writes are worked out on these, and still commit
	// after them.
	ran, over := make(chan struct{}), make(chan struct{})
	next := p.begin("s")
	next.run(func() {
		if b := next.before(); len(b) != 1 || b[0] != want {
			t.Errorf("the next call's writes are worked out on %v", b)
		}
		next.waitPrev()
		close(ran)
	}, func() { close(over) })
	select {
	case <-ran:
		t.Fatal("the next call's writes ran before the earlier ones committed")
	case <-time.After(20 * time.Millisecond):
	}
	close(commit)
	<-ran
	// The slot leaves the session's pending writes after its function
	// returns: wait for all of it to be over, not for the function.
	<-over
	if got, _, outcome := p.wait(context.Background(), "s"); got != nil || outcome != "" {
		t.Fatalf("after the writes: %v, %q", got, outcome)
	}

	// Writes that publish nothing are waited for.
	commit = make(chan struct{})
	s = p.begin("s")
	s.run(func() {
		s.publish(nil)
		<-commit
	}, nil)
	waited := make(chan string)
	go func() {
		ah, _, outcome := p.wait(context.Background(), "s")
		waited <- fmt.Sprintf("%v %s", ah, outcome)
	}()
	select {
	case o := <-waited:
		t.Fatalf("wait ended (%s) before the unpublished writes were over", o)
	case <-time.After(20 * time.Millisecond):
	}
	close(commit)
	if o := <-waited; o != "<nil> done" {
		t.Fatalf("wait ended %s", o)
	}
}

// TestPendingBoundsWritesAhead: a call reads through at most maxAhead of
// its session's writes still to commit; behind more (a session called
// faster than its writes commit) it waits for the oldest to commit.
func TestPendingBoundsWritesAhead(t *testing.T) {
	p := order{settle: time.Microsecond}
	n := maxAhead + 2
	commits := make([]chan struct{}, n)
	for i := range n {
		commits[i] = make(chan struct{})
		s := p.begin("s")
		s.run(func() {
			s.publish(&ahead{before: s.before(), done: s.doneChan()})
			s.waitPrev()
			<-commits[i]
		}, nil)
	}
	waited := make(chan string)
	go func() {
		ah, _, outcome := p.wait(context.Background(), "s")
		waited <- fmt.Sprintf("%v %s", ah != nil, outcome)
	}()
	for i := range n - maxAhead {
		select {
		case o := <-waited:
			t.Fatalf("wait ended (%s) behind %d writes still to commit", o, n-i)
		case <-time.After(20 * time.Millisecond):
		}
		close(commits[i])
	}
	if o := <-waited; o != "true ahead" {
		t.Fatalf("wait ended %s", o)
	}
	for _, c := range commits[n-maxAhead:] {
		close(c)
	}
	p.wait(context.Background(), "s")
}

// TestPendingCommitsInOrder: a call's writes commit after every earlier
// write of the session, though a call between them wrote nothing and was
// over at once.
func TestPendingCommitsInOrder(t *testing.T) {
	p := order{settle: time.Microsecond}
	var mu sync.Mutex
	var order []int
	commit := make(chan struct{})
	first, empty, third := p.begin("s"), p.begin("s"), p.begin("s")
	first.run(func() {
		first.publish(&ahead{})
		<-commit
		mu.Lock()
		order = append(order, 1)
		mu.Unlock()
	}, nil)
	empty.run(func() {}, nil)
	done := make(chan struct{})
	third.run(func() {
		third.waitPrev()
		mu.Lock()
		order = append(order, 3)
		mu.Unlock()
		close(done)
	}, nil)
	select {
	case <-done:
		t.Fatal("the third call's writes ran before the first's committed")
	case <-time.After(20 * time.Millisecond):
	}
	close(commit)
	<-done
	if len(order) != 2 || order[0] != 1 {
		t.Fatalf("committed in order %v", order)
	}
}
