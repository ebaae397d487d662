package proxy

import (
	"context"
	"sync"
	"time"
)

// maxPendingWait bounds how long a call waits for its session's previous
// writes; past it the call routes on what the store holds (fail open).
const maxPendingWait = 2 * time.Second

// settleDelay is how long a call's writes hold off after its answer unless
// a call of the same session waits for them: on a machine of few cores the
// bookkeeping of one answer (a record update costs up to a few ms of CPU)
// otherwise runs just as that answer, and those of other sessions, are
// being delivered.
const settleDelay = 3 * time.Millisecond

// pending orders each session's writes after their responses, and lets the
// session's next call wait for them: a harness sends the next call of a
// turn as soon as a tool has run, and routing it on a store that lacks the
// previous call's labels and frozen memory would change the forwarded
// prefix.
type pending struct {
	mu     sync.Mutex
	last   map[string]*slot // session -> its latest write slot
	settle time.Duration    // settleDelay when zero
}

// slot is one call's writes: done is closed when they are over; hurry,
// closed by a call that waits for them, ends their settle delay.
type slot struct {
	done, hurry chan struct{}
	once        sync.Once
}

func (s *slot) rush() { s.once.Do(func() { close(s.hurry) }) }

// begin reserves the session's next write slot at once, before the
// response goes out, so that a next call arriving the moment the client has
// read the answer waits for this call's writes. The returned function must
// be called exactly once, with the writes to run in the background after
// the session's earlier ones and the settle delay.
func (p *pending) begin(session string) func(fn func()) {
	s := &slot{done: make(chan struct{}), hurry: make(chan struct{})}
	p.mu.Lock()
	if p.last == nil {
		p.last = map[string]*slot{}
	}
	prev := p.last[session]
	p.last[session] = s
	settle := p.settle
	p.mu.Unlock()
	if settle == 0 {
		settle = settleDelay
	}
	return func(fn func()) {
		go func() {
			defer close(s.done)
			if prev != nil {
				select {
				case <-prev.done:
				case <-s.hurry:
					prev.rush()
					<-prev.done
				}
			}
			t := time.NewTimer(settle)
			select {
			case <-t.C:
			case <-s.hurry:
				t.Stop()
			}
			fn()
			p.mu.Lock()
			if p.last[session] == s {
				delete(p.last, session)
			}
			p.mu.Unlock()
		}()
	}
}

// wait blocks until the session's writes so far are done, the wait bound
// passes or ctx ends; it ends their settle delay. It says how long it
// waited and why it stopped ("done", "bound" or "cancelled"); "" when
// nothing was pending.
func (p *pending) wait(ctx context.Context, session string) (time.Duration, string) {
	p.mu.Lock()
	s := p.last[session]
	p.mu.Unlock()
	if s == nil {
		return 0, ""
	}
	s.rush()
	start := time.Now()
	t := time.NewTimer(maxPendingWait)
	defer t.Stop()
	outcome := "done"
	select {
	case <-s.done:
	case <-t.C:
		outcome = "bound"
	case <-ctx.Done():
		outcome = "cancelled"
	}
	return time.Since(start), outcome
}
