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
