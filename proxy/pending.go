package proxy

import (
	"context"
	"sync"
	"time"

	"github.com/rcm-dev/rcm/memory"
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
// prefix. The call waits until those writes are worked out, not until they
// are on disk: it routes on them ahead of their commit (see ahead), so it
// never waits for an fsync, unless the writes before them still do.
type pending struct {
	mu     sync.Mutex
	last   map[string]*slot // session -> its latest write slot
	settle time.Duration    // settleDelay when zero
}

// slot is one call's writes: ready is closed when what they will store is
// known (ahead), done when they are over; hurry, closed by a call that
// waits for them, ends their settle delay. A nil slot runs writes at once,
// unordered.
type slot struct {
	ready, done, hurry  chan struct{}
	rushOnce, readyOnce sync.Once
	// ahead is set before ready is closed; nil when the writes cannot be
	// read before they run (then a waiting call waits for done).
	ahead *ahead
	p     *pending
	key   string // the session, p.last's key
	prev  *slot  // the session's slot before, until its writes are over
}

// ahead is what a call's writes will have stored once they commit, as
// far as its session's next call reads it.
type ahead struct {
	task string // the task lastTask would find in the call's event
	// writes is filled by fill on its first read; fill reads only what
	// the call's assembly no longer changes.
	writes *memory.Pending
	fill   func(*memory.Pending) error
	once   sync.Once
	err    error
}

// pendingWrites is a's writes, nil when there are none. When they cannot
// be worked out, the transaction that makes them fails the same way, so
// the reads go to the store alone.
func (a *ahead) pendingWrites() *memory.Pending {
	if a == nil {
		return nil
	}
	a.once.Do(func() {
		if a.fill != nil {
			a.err = a.fill(a.writes)
		}
	})
	if a.err != nil {
		return nil
	}
	return a.writes
}

func (s *slot) rush() { s.rushOnce.Do(func() { close(s.hurry) }) }

// publish makes what the writes will store readable by the session's next
// call; it must come before they run (nil: cannot be known in advance).
// Only the first call counts.
func (s *slot) publish(a *ahead) {
	if s == nil {
		return
	}
	s.readyOnce.Do(func() {
		s.ahead = a
		close(s.ready)
	})
}

// begin reserves the session's next write slot at once, before the
// response goes out, so that a next call arriving the moment the client has
// read the answer waits for this call's writes. The slot's run must be
// called exactly once.
func (p *pending) begin(session string) *slot {
	s := &slot{ready: make(chan struct{}), done: make(chan struct{}), hurry: make(chan struct{}), p: p, key: session}
	p.mu.Lock()
	if p.last == nil {
		p.last = map[string]*slot{}
	}
	s.prev = p.last[session]
	p.last[session] = s
	p.mu.Unlock()
	return s
}

// run runs fn in the background after the session's earlier writes are
// over and the settle delay. fn should publish what it will store before
// it writes.
func (s *slot) run(fn func()) {
	if s == nil {
		go fn()
		return
	}
	settle := s.p.settle
	if settle == 0 {
		settle = settleDelay
	}
	go func() {
		defer close(s.done)
		defer s.publish(nil)
		if prev := s.prev; prev != nil {
			select {
			case <-prev.done:
			case <-s.hurry:
				prev.rush()
				<-prev.done
			}
			s.prev = nil // let it go
		}
		t := time.NewTimer(settle)
		select {
		case <-t.C:
		case <-s.hurry:
			t.Stop()
		}
		fn()
		s.p.mu.Lock()
		if s.p.last[s.key] == s {
			delete(s.p.last, s.key)
		}
		s.p.mu.Unlock()
	}()
}

// wait blocks until what the session's writes so far will store is known
// (or, when it cannot be known in advance, until they are over), the wait
// bound passes or ctx ends; it ends their settle delay. It returns what to
// read ahead of the store (nil: nothing), how long it waited and why it
// stopped: "ahead" (the writes are still to commit), "done", "bound" or
// "cancelled"; "" when nothing was pending.
func (p *pending) wait(ctx context.Context, session string) (*ahead, time.Duration, string) {
	p.mu.Lock()
	s := p.last[session]
	p.mu.Unlock()
	if s == nil {
		return nil, 0, ""
	}
	s.rush()
	start := time.Now()
	t := time.NewTimer(maxPendingWait)
	defer t.Stop()
	until := func(c chan struct{}) string {
		select {
		case <-c:
			return "done"
		case <-t.C:
			return "bound"
		case <-ctx.Done():
			return "cancelled"
		}
	}
	outcome := until(s.ready)
	if outcome == "done" {
		select {
		case <-s.done:
		default:
			if s.ahead == nil {
				outcome = until(s.done)
				break
			}
			// Reads apply the writes over the store whether or not they
			// commit meanwhile.
			return s.ahead, time.Since(start), "ahead"
		}
	}
	return nil, time.Since(start), outcome
}
