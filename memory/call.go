package memory

import (
	"context"
	"time"
)

// Call is one model call's place in its session's writes. A session's
// calls write after their answers, off the request path, and its next call
// routes on what they wrote: Begin waits for the session's earlier writes
// (this process's are read ahead of their commit, through Reads; another
// replica's, on PostgreSQL, until they commit) and reserves the call's
// place after them, so that the session's writes commit in call order
// whichever replica makes them. A nil *Call (a call that is not ordered)
// reads nothing ahead.
type Call struct {
	s       *Store
	session string
	// reads is what the call reads of the session's earlier writes ahead
	// of their commit (nil: nothing).
	reads *ahead
	// slot is the call's place in the session's writes (nil: the call
	// only reads, as a subagent's does); own is what it will write.
	slot  *slot
	own   *ahead
	claim Claim
}

// Wait is how a call's wait for earlier writes went: how long it took
// and why it ended ("": nothing to wait for; "ahead": this process's
// writes are read ahead of their commit; "done" or "replica": they
// committed; "bound", "cancelled", or "error": the store could not say).
type Wait struct {
	Took    time.Duration
	Outcome string
}

// Await waits for the session's earlier writes of this process (at most
// 2 s, or until ctx ends), for a call that reads them but takes no place
// in the session's order: a subagent's, which never changes what its
// parent's calls route on.
func (s *Store) Await(ctx context.Context, session string) (*Call, Wait) {
	reads, d, outcome := s.order.wait(ctx, session)
	return &Call{s: s, session: session, reads: reads}, Wait{d, outcome}
}

// Begin waits as Await does, reserves the call's place in the session's
// writes, and claims it for the other replicas sharing the store, waiting
// (at most maxPendingWait too) for the writes they claimed before. It returns
// the call and both waits. Run must follow, exactly once.
func (s *Store) Begin(ctx context.Context, session string) (*Call, Wait, Wait) {
	c, local := s.Await(ctx, session)
	c.slot = s.order.begin(session)
	claim, d, outcome := s.Claim(ctx, session, maxPendingWait)
	c.claim = claim
	return c, local, Wait{d, outcome}
}

// Unordered is a call of session that takes no place in its writes and
// reads none ahead (a title call, which runs beside the agent's): its
// writes queue at once.
func (s *Store) Unordered(session string) *Call { return &Call{s: s, session: session} }

// Reads lists the session's earlier writes still to commit, oldest first,
// for the call's reads (ViewWith).
func (c *Call) Reads() []*Pending {
	if c == nil {
		return nil
	}
	return c.reads.pendingWrites()
}

// Task is the task of the session's latest routed agent call, through the
// writes the call reads ahead ("" when it cannot be read).
func (c *Call) Task() string {
	if c == nil {
		return ""
	}
	var task string
	err := c.s.ViewWith(c.Reads(), func(v *View) (err error) {
		task, err = v.LastTask(c.session)
		return err
	})
	if err != nil {
		return ""
	}
	return task
}

// ordered says whether the call has a place in its session's writes.
func (c *Call) ordered() bool { return c != nil && c.slot != nil }

// Run runs fn in the background once what the session's earlier writes
// will store is known, and then, when not nil, last, once the call's place
// is over. fn either writes nothing (Skip) or commits what it writes
// (Commit).
func (c *Call) Run(fn, then func()) {
	if c == nil {
		c = &Call{}
	}
	c.slot.run(fn, then)
}

// before lists the session's earlier writes still to commit, oldest first,
// on which the call's own are worked out. Valid within Run.
func (c *Call) before() []*Pending {
	if c == nil {
		return nil
	}
	return aheadWrites(c.slot.before())
}

// Skip says the call writes nothing: the session's next call reads the
// earlier writes, and other replicas no longer wait for it.
func (c *Call) Skip() {
	if c == nil {
		return
	}
	c.slot.publish(&ahead{before: c.slot.before(), done: c.slot.doneChan()})
	c.Release()
}

// Release ends the call's claim without its writes (they failed).
func (c *Call) Release() {
	if c != nil {
		c.s.Release(c.claim)
	}
}

// publish makes what the call will write readable by the session's next
// call before it commits: fill puts those writes into p, reading the store
// through before (the earlier writes), when a call first reads them; task
// is the task its event names. It must come before queue.
func (c *Call) publish(task string, fill func(p *Pending, before []*Pending) error) {
	if !c.ordered() {
		return
	}
	c.own = &ahead{writes: NewPending(c.session), before: c.slot.before(), done: c.slot.doneChan(), fill: fill}
	c.own.writes.PutEventTask(task)
	c.slot.publish(c.own)
}

// prev waits until the session's earlier writes have their place in the
// store's commit order. Within Run only.
func (c *Call) prev() {
	if c != nil {
		c.slot.waitPrev()
	}
}

// queue queues fn, the call's writes, in the store's commit order after the
// session's earlier writes (prev first), with the end of its claim and the
// mark that its published writes committed; the session's next call may
// queue its own at once. It returns Store.Queue's wait.
func (c *Call) queue(fn func(*Tx) error) (wait func() error) {
	wait = c.s.Queue(func(w *Tx) error {
		if err := w.Release(c.claim); err != nil {
			return err
		}
		if c.own != nil {
			if err := w.Commits(c.own.writes); err != nil {
				return err
			}
		}
		return fn(w)
	})
	c.slot.place()
	return wait
}

// Progress is where a call's writes stand, as channels closed when they
// have been published (readable ahead of their commit, or known to be
// none), placed in the store's commit order, and over along with every
// earlier write of the session; nil channels for a call that is not
// ordered. Tests and tools wait on them.
type Progress struct {
	Published, Placed, Done <-chan struct{}
}

// Progress returns the call's Progress.
func (c *Call) Progress() Progress {
	if !c.ordered() {
		return Progress{}
	}
	return Progress{c.slot.ready, c.slot.placed, c.slot.done}
}
