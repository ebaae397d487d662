package proxy

import (
	"context"
	"sync"
	"time"
)

// maxPendingWait bounds how long a call waits for its session's previous
// writes; past it the call routes on what the store holds (fail open).
const maxPendingWait = 2 * time.Second

// pending orders each session's writes after their responses, and lets the
// session's next call wait for them: a harness sends the next call of a
// turn as soon as a tool has run, and routing it on a store that lacks the
// previous call's labels and frozen memory would change the forwarded
// prefix.
type pending struct {
	mu   sync.Mutex
	last map[string]chan struct{} // session -> closed when its latest write is done
}

// begin reserves the session's next write slot at once, before the
// response goes out, so that a next call arriving the moment the client has
// read the answer waits for this call's writes. The returned function must
// be called exactly once, with the writes to run in the background after
// the session's earlier ones.
func (p *pending) begin(session string) func(fn func()) {
	done := make(chan struct{})
	p.mu.Lock()
	if p.last == nil {
		p.last = map[string]chan struct{}{}
	}
	prev := p.last[session]
	p.last[session] = done
	p.mu.Unlock()
	return func(fn func()) {
		go func() {
			defer close(done)
			if prev != nil {
				<-prev
			}
			fn()
			p.mu.Lock()
			if p.last[session] == done {
				delete(p.last, session)
			}
			p.mu.Unlock()
		}()
	}
}

// wait blocks until the session's writes so far are done, the wait bound
// passes or ctx ends. It says how long it waited and why it stopped
// ("done", "bound" or "cancelled"); "" when nothing was pending.
func (p *pending) wait(ctx context.Context, session string) (time.Duration, string) {
	p.mu.Lock()
	ch := p.last[session]
	p.mu.Unlock()
	if ch == nil {
		return 0, ""
	}
	start := time.Now()
	t := time.NewTimer(maxPendingWait)
	defer t.Stop()
	outcome := "done"
	select {
	case <-ch:
	case <-t.C:
		outcome = "bound"
	case <-ctx.Done():
		outcome = "cancelled"
	}
	return time.Since(start), outcome
}
