package memory

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// commitWindow is how long writes that overlap a commit under way gather
// before they commit together, well inside the durability promise (1 s).
// Every session a commit touches rewrites its pages: under load (128
// sessions, 4,000 calls a second) a 10 ms window wrote 3.3 pages a call,
// 50 ms 2.2.
const commitWindow = 50 * time.Millisecond

// maxGroup starts a group's commit before its window ends (bbolt's
// default MaxBatchSize).
const maxGroup = 1000

// commits gathers writes into shared commits in the order they are queued.
// bbolt's Batch gathers too, but in no set order, so a session's writes,
// which must commit in order, could never share a commit: a session could
// write once per commit of the store, and a wider window slowed it.
type commits struct {
	mu sync.Mutex
	// gathering takes the writes queued while a commit is under way (busy);
	// it commits once that one is over and its window has passed.
	gathering *group
	busy      bool
	window    time.Duration // commitWindow in the store
	max       int           // maxGroup in the store
}

// group is the writes of one commit, in order.
type group struct {
	fns   []func(writer) error
	errs  []error // each write's outcome, set before done is closed
	due   bool    // its window has passed, or it is full
	timer *time.Timer
	done  chan struct{}
}

// Queue gives fn its place in the store's commit order and returns a
// function that waits for it to commit and returns its error. A write
// queued after Queue returns commits after fn: later in the same
// transaction or in a later one. A write queued while the store is idle
// commits at once; otherwise it joins the writes gathering for the window
// (opened by the first write queued during a commit).
//
// fn may run more than once (when another write of its transaction fails,
// the others run again without it) and must only modify what it writes.
// A panic in fn reaches the caller of wait; the other writes still commit.
func (s *Store) Queue(fn func(*Tx) error) (wait func() error) {
	c := &s.commits
	c.mu.Lock()
	g, start := c.gathering, false
	if g == nil {
		g = &group{done: make(chan struct{})}
		if c.busy {
			c.gathering = g
			g.timer = time.AfterFunc(c.window, func() { s.due(g) })
		} else {
			c.busy, start = true, true
		}
	}
	i := len(g.fns)
	g.fns = append(g.fns, func(w writer) error { return fn(&Tx{s: s, w: w}) })
	if !start && len(g.fns) >= c.max && !g.due {
		g.timer.Stop()
		start = c.ripen(g)
	}
	c.mu.Unlock()
	if start {
		go s.commit(g)
	}
	return func() error {
		<-g.done
		if p, ok := g.errs[i].(panicked); ok {
			panic(p.reason)
		}
		return g.errs[i]
	}
}

// Update runs fn in one write transaction and returns once it has
// committed (see Queue).
func (s *Store) Update(fn func(*Tx) error) error {
	return s.Queue(fn)()
}

// due starts g once its window has passed, unless a commit is under way
// (which starts it when it ends).
func (s *Store) due(g *group) {
	c := &s.commits
	c.mu.Lock()
	start := c.ripen(g)
	c.mu.Unlock()
	if start {
		s.commit(g)
	}
}

// ripen marks g due and, when it is still gathering and no commit is under
// way, takes it to commit (start); c.mu is held.
func (c *commits) ripen(g *group) (start bool) {
	g.due = true
	if c.gathering != g || c.busy {
		return false
	}
	c.gathering, c.busy = nil, true
	return true
}

// commit commits g, then every group that became due meanwhile. A
// group's writers learn the outcome once the next group has started or
// the store is idle: a write queued after one returns from its wait then
// commits at once if nothing else is under way.
func (s *Store) commit(g *group) {
	c := &s.commits
	for g != nil {
		s.run(g)
		c.mu.Lock()
		next := c.gathering
		if next != nil && next.due {
			c.gathering = nil
		} else {
			next, c.busy = nil, false
		}
		c.mu.Unlock()
		close(g.done)
		g = next
	}
}

// run commits g's writes in one transaction. A write that fails is left
// out with its error and the others run again.
func (s *Store) run(g *group) {
	g.errs = make([]error, len(g.fns))
	left := make([]int, len(g.fns))
	for i := range left {
		left[i] = i
	}
	for len(left) > 0 {
		var failed int
		err := s.b.update(func(w writer) error {
			failed = -1 // the backend may run the whole again
			for j, i := range left {
				if err := safely(g.fns[i], w); err != nil {
					failed = j
					return err
				}
			}
			return nil
		})
		if failed < 0 || errors.Is(err, ErrUnavailable) {
			// All ran (err is the commit's), or the store cannot be
			// reached: running the others again would fail alike.
			for _, i := range left {
				g.errs[i] = err
			}
			break
		}
		g.errs[left[failed]] = err
		left = slices.Delete(left, failed, failed+1)
	}
}

// panicked is a panic of a write, handed to the caller that queued it.
type panicked struct{ reason any }

func (p panicked) Error() string { return fmt.Sprintf("panic: %v", p.reason) }

func safely(fn func(writer) error, w writer) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicked{p}
		}
	}()
	return fn(w)
}
