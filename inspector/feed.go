package inspector

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcm-dev/rcm/memory"
)

// Call is one message of the live feed: a call of a session, as stored.
type Call struct {
	Session string       `json:"session"`
	Event   memory.Event `json:"event"`
}

// subscriberBuffer is how many calls a slow client may fall behind before
// it misses some.
const subscriberBuffer = 64

// keepAlive is the interval of the comment a stream sends when idle;
// writeWait bounds each write, so that a client that stopped reading (its
// connection still open) does not hold a stream forever. It also lifts any
// server-wide WriteTimeout, which would cut every stream short.
const (
	keepAlive = 15 * time.Second
	writeWait = 30 * time.Second
)

// Feed fans calls out to the inspector's live streams. Its zero value is
// ready to use; it is safe for concurrent use.
type Feed struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	closed bool
	done   chan struct{} // closed by Close
}

type subscriber struct {
	session string // "" for every session
	ch      chan []byte
	dropped atomic.Int64 // calls missed since the last one delivered
}

// Publish sends c to every stream that wants it, without blocking: a
// stream whose buffer is full misses it and is told so later.
func (f *Feed) Publish(c Call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.subs) == 0 {
		return
	}
	data, err := json.Marshal(c)
	if err != nil {
		return // an Event always encodes; nothing to tell anyone
	}
	for s := range f.subs {
		if s.session != "" && s.session != c.Session {
			continue
		}
		select {
		case s.ch <- data:
		default:
			s.dropped.Add(1)
		}
	}
}

// Close ends every stream, now and later (server shutdown: a stream would
// otherwise hold the graceful shutdown until its timeout).
func (f *Feed) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		f.doneChan()
		close(f.done)
	}
}

// doneChan returns the channel Close closes; f.mu must be held.
func (f *Feed) doneChan() chan struct{} {
	if f.done == nil {
		f.done = make(chan struct{})
	}
	return f.done
}

func (f *Feed) subscribe(session string) (*subscriber, <-chan struct{}, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, nil, false
	}
	s := &subscriber{session: session, ch: make(chan []byte, subscriberBuffer)}
	if f.subs == nil {
		f.subs = map[*subscriber]struct{}{}
	}
	f.subs[s] = struct{}{}
	return s, f.doneChan(), true
}

func (f *Feed) unsubscribe(s *subscriber) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs, s)
}

// Serve streams calls as server-sent events ("call" events whose data is
// a Call; "dropped" events whose data is how many calls were missed), one
// flush per event, until the client leaves or the feed closes.
// ?session=ID limits the stream to one session. It returns false, having
// written nothing, when the feed is already closed.
func (f *Feed) Serve(w http.ResponseWriter, r *http.Request) bool {
	s, done, ok := f.subscribe(r.URL.Query().Get("session"))
	if !ok {
		return false
	}
	defer f.unsubscribe(s)
	f.stream(w, r, s, done)
	return true
}

func (f *Feed) stream(w http.ResponseWriter, r *http.Request, s *subscriber, done <-chan struct{}) {
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Now().Add(writeWait)) // unsupported by some writers: then unbounded
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The retry hint doubles as the first bytes, so the client's
	// EventSource opens at once.
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil || rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-done:
			return
		case <-tick.C:
			rc.SetWriteDeadline(time.Now().Add(writeWait))
			_, err = fmt.Fprint(w, ": ping\n\n")
		case data := <-s.ch:
			rc.SetWriteDeadline(time.Now().Add(writeWait))
			if n := s.dropped.Swap(0); n > 0 {
				_, err = fmt.Fprintf(w, "event: dropped\ndata: %d\n\n", n)
			}
			if err == nil {
				_, err = fmt.Fprintf(w, "event: call\ndata: %s\n\n", data)
			}
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			return // the client is gone
		}
	}
}
