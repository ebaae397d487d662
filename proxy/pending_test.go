package proxy

import (
	"context"
	"testing"
	"time"
)

func TestPendingOrdersWritesPerSession(t *testing.T) {
	var p pending
	var order []int
	step := make(chan struct{})
	first := p.begin("s")
	second := p.begin("s")
	other := p.begin("o")
	second(func() { order = append(order, 2) })
	other(func() {}) // another session does not wait for s
	waited := make(chan struct{})
	go func() { p.wait(context.Background(), "s"); close(waited) }()
	select {
	case <-waited:
		t.Fatal("wait returned while the session's writes were pending")
	case <-time.After(20 * time.Millisecond):
	}
	first(func() { <-step; order = append(order, 1) })
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
	stuck(func() {})
}

// TestPendingSettles: a call's writes hold off after its answer, and a call
// of the same session that waits for them ends that delay, for the writes
// of earlier calls still queued too.
func TestPendingSettles(t *testing.T) {
	p := pending{settle: time.Hour}
	ran := make(chan int, 2)
	first, second := p.begin("s"), p.begin("s")
	first(func() { ran <- 1 })
	second(func() { ran <- 2 })
	select {
	case n := <-ran:
		t.Fatalf("write %d ran during its settle delay", n)
	case <-time.After(50 * time.Millisecond):
	}
	if _, outcome := p.wait(context.Background(), "s"); outcome != "done" {
		t.Fatalf("wait ended %q, want done: the delay held", outcome)
	}
	if a, b := <-ran, <-ran; a != 1 || b != 2 {
		t.Fatalf("writes ran in order %d %d", a, b)
	}
}
