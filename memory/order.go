package memory

import (
	"context"
	"slices"
	"sync"
	"time"
)

// maxPendingWait bounds how long a call waits for its session's previous
// writes, this process's and (claims) another replica's; past it the call
// routes on what the store holds (fail open).
const maxPendingWait = 2 * time.Second

// maxAhead is how many of a session's writes still to commit a call reads
// through; a call behind more waits for the oldest to commit.
const maxAhead = 8

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
// never waits for an fsync. A call's writes are worked out once the
// session's earlier ones are (reading them ahead too), and commit after
// them.
type order struct {
	mu     sync.Mutex
	last   map[string]*slot // session -> its latest write slot
	settle time.Duration    // settleDelay when zero
}

// slot is one call's writes: ready is closed when what they will store is
// known (ahead), placed when they have their place in the store's commit
// order (Store.Queue) or turned out to write nothing, done when they
// and every earlier write of the session are over; hurry, closed by a call
// that waits for them, ends their settle delay. A nil slot runs writes at
// once, unordered.
type slot struct {
	ready, placed, done, hurry     chan struct{}
	rushOnce, readyOnce, placeOnce sync.Once
	// ahead is set before ready is closed; nil when the writes cannot be
	// read before they run (then a waiting call waits for done).
	ahead *ahead
	p     *order
	key   string // the session, p.last's key
	prev  *slot  // the session's slot before, until its writes are over
}

// ahead is what a call's writes will have stored once they commit, as
// far as its session's next call reads it.
type ahead struct {
	done   <-chan struct{} // closed when the writes are over
	writes *Pending

	mu sync.Mutex
	// before are the session's earlier writes still to commit when these
	// were published, oldest first: they commit first.
	before []*ahead
	// fill fills writes on their first read; it reads only what the
	// call's assembly no longer changes, and the store through the writes
	// before. Both are let go once the writes are over (release): they
	// hold earlier calls, and a view no longer reads committed writes.
	fill   func(p *Pending, before []*Pending) error
	filled bool
	err    error
}

// pendingWrites lists the writes to read ahead of the store, oldest first:
// a's and those before them (none when a is nil). Writes that cannot be
// worked out are left out: the transaction that makes them fails the same
// way.
func (a *ahead) pendingWrites() []*Pending {
	if a == nil {
		return nil
	}
	return aheadWrites(a.chain())
}

// chain lists the writes before a and a, oldest first.
func (a *ahead) chain() []*ahead {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append(slices.Clone(a.before), a)
}

// release lets go of what the writes were worked out from, once they are
// over.
func (a *ahead) release() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.before, a.fill = nil, nil
	a.mu.Unlock()
}

// aheadWrites lists the writes of as that can be worked out, in order.
func aheadWrites(as []*ahead) []*Pending {
	var out []*Pending
	for _, a := range as {
		if p := a.own(); p != nil {
			out = append(out, p)
		}
	}
	return out
}

// own is a's own writes, worked out on the first call; nil when they
// cannot be.
func (a *ahead) own() *Pending {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.filled && a.fill != nil {
		// Earlier writes are older aheads: the locks are taken in order.
		a.err = a.fill(a.writes, aheadWrites(a.before))
		a.filled = true
	}
	if a.err != nil {
		return nil
	}
	return a.writes
}

// unfinished lists a and the writes before it that are not over yet,
// oldest first: the writes before a later call's.
func (a *ahead) unfinished() []*ahead {
	if a == nil {
		return nil
	}
	var out []*ahead
	for _, b := range a.chain() {
		select {
		case <-b.done:
		default:
			out = append(out, b)
		}
	}
	return out
}

func (s *slot) rush() { s.rushOnce.Do(func() { close(s.hurry) }) }

// waitPrev waits until the session's earlier writes have their place in
// the store's commit order: the call's own writes, queued after, commit
// after them, in the same commit or a later one. Only the slot's run calls
// it, from fn or after.
func (s *slot) waitPrev() {
	if s == nil || s.prev == nil {
		return
	}
	<-s.prev.placed
}

// place says the slot's writes have their place in the commit order (or
// that it has none to write); it must follow waitPrev.
func (s *slot) place() {
	if s != nil {
		s.placeOnce.Do(func() { close(s.placed) })
	}
}

// doneChan is closed when the slot's writes are over (nil for a nil slot).
func (s *slot) doneChan() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.done
}

// before lists the session's earlier writes still to commit, oldest first,
// which the slot's own writes are worked out on (nil once they are over).
// It is valid from fn, once run has waited for them to be known.
func (s *slot) before() []*ahead {
	if s == nil || s.prev == nil {
		return nil
	}
	return s.prev.ahead.unfinished()
}

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
func (p *order) begin(session string) *slot {
	s := &slot{ready: make(chan struct{}), placed: make(chan struct{}), done: make(chan struct{}), hurry: make(chan struct{}), p: p, key: session}
	p.mu.Lock()
	if p.last == nil {
		p.last = map[string]*slot{}
	}
	s.prev = p.last[session]
	p.last[session] = s
	p.mu.Unlock()
	return s
}

// run runs fn in the background once what the session's earlier writes
// will store is known (or, when it cannot be, once they are over) and after
// the settle delay. fn should publish what it will store, then call waitPrev
// before it queues its writes, and place once they are queued. then, when
// not nil, runs last, once the slot is over (no call of the session finds
// it any more).
func (s *slot) run(fn, then func()) {
	if then == nil {
		then = func() {}
	}
	if s == nil {
		go func() {
			defer then()
			fn()
		}()
		return
	}
	settle := s.p.settle
	if settle == 0 {
		settle = settleDelay
	}
	go func() {
		defer then()
		defer close(s.done)
		defer s.publish(nil)
		if prev := s.prev; prev != nil {
			select {
			case <-prev.ready:
			case <-s.hurry:
				prev.rush()
				<-prev.ready
			}
			if prev.ahead == nil {
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
		s.waitPrev()
		s.place()
		if s.prev != nil {
			<-s.prev.done // done means the earlier writes are over too
			s.prev = nil  // let it go
		}
		s.ahead.release()
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
func (p *order) wait(ctx context.Context, session string) (*ahead, time.Duration, string) {
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
	until := func(c <-chan struct{}) string {
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
			// commit meanwhile. A session called faster than its writes
			// commit (one per commit, in order) would pile them up, and
			// every read would cross them all: past maxAhead, the call
			// waits for the oldest to commit.
			if chain := s.ahead.unfinished(); len(chain) > maxAhead {
				if outcome = until(chain[len(chain)-maxAhead-1].done); outcome != "done" {
					return nil, time.Since(start), outcome
				}
			}
			return s.ahead, time.Since(start), "ahead"
		}
	}
	return nil, time.Since(start), outcome
}
