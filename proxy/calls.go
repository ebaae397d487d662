package proxy

import (
	"container/list"
	"encoding/json"
	"sync"

	"github.com/rcm-dev/rcm/compaction"
	"github.com/rcm-dev/rcm/internal/str"
	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/transcript"
)

// details adds what the inspector shows of a call to its event: the
// threshold, each turn's task, size and fate, the record message injected
// and the cached-prefix share.
func (a *assembly) details(e *memory.Event, share *float64) {
	e.Threshold = a.threshold
	e.PrefixShare = share
	t := a.transcript
	if t == nil || a.fallback == FallbackSideCall {
		return
	}
	routed := a.fallback == FallbackNone && a.kept != nil
	kept := make([]bool, len(t.Messages))
	for _, i := range a.kept {
		kept[i] = true
	}
	for i := 0; i < t.Preamble; i++ {
		e.SystemTokens += len(t.Messages[i].Raw)
	}
	e.SystemTokens = compaction.Estimate(e.SystemTokens)
	e.Turns = make([]memory.TurnStat, len(t.Turns))
	for ti, turn := range t.Turns {
		// A turn goes whole or not at all: its opening message tells.
		s := memory.TurnStat{Dropped: routed && !kept[turn.Start]}
		n := 0
		for i := turn.Start; i < turn.End; i++ {
			n += len(t.Messages[i].Raw)
		}
		s.Tokens = compaction.Estimate(n)
		if a.plan != nil && ti < len(a.plan.Turns) {
			s.Task = a.plan.Turns[ti].Task
		}
		e.Turns[ti] = s
	}
	if routed && len(a.injected) > 0 && json.Valid(a.injected) {
		e.Record = append(json.RawMessage(nil), a.injected...)
	}
}

// maxPrefixBytes bounds the forwarded contexts kept for cached-prefix shares;
// past it the least recently used sessions' bodies are let go (their next
// call's share is unknown).
const maxPrefixBytes = 64 << 20

// prefixes holds each session's last forwarded context (the messages
// array), to measure how much of the next one repeats it byte for byte: the
// part a provider's prompt cache can serve. Only the messages count: the
// fields around them (tools, options) are forwarded unchanged, and a
// provider renders the tools before the messages anyway. The contexts are
// slices of the calls' own buffers, not copies; the bytes counted are the
// buffers'.
type prefixes struct {
	mu    sync.Mutex
	last  map[string]*list.Element // chain key -> element of lru (*prefixEntry)
	lru   list.List                // front: most recently used
	bytes int
}

// prefixEntry is one call's place in its chain: context is set, and ready
// closed, once the call's share has been measured; evicted says the
// context was let go before that.
type prefixEntry struct {
	key string
	// body is the call's forwarded body and [start:end] its context in it.
	body       []byte
	start, end int
	ready      chan struct{}
	evicted    bool
}

// context is the entry's forwarded context (nil once let go).
func (e *prefixEntry) context() []byte {
	if e.body == nil {
		return nil
	}
	return e.body[e.start:e.end]
}

// prefixShare is a call's place in its chain, taken when its answer has
// gone out; measure computes the share off the response path.
type prefixShare struct {
	p          *prefixes
	prev, this *prefixEntry // prev nil: the first of the chain (or let go)
	body       []byte
	share      *float64 // measure's result, once this.ready is closed
}

// take puts a's forwarded context next in its chain (the session's calls in
// the same mode), in the order the answers end, and returns the call's
// place, whose measure must then run; nil when the call takes no part. It
// does no work proportional to the body. Side calls (title, compaction)
// neither count nor break the chain. Native mode does not parse bodies
// that name their session, so there a side call cannot be told apart and
// does take part; keeping one chain per mode keeps such a call (OpenCode
// sends its title call through a native provider) out of a routed
// session's chain.
func (p *prefixes) take(a *assembly) *prefixShare {
	if a.session == "" || len(a.body) == 0 || a.transcript != nil && a.transcript.Kind.Side() {
		return nil
	}
	key := string(a.mode) + " " + a.session
	ps := &prefixShare{p: p, this: &prefixEntry{key: key, ready: make(chan struct{})}, body: a.body}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[string]*list.Element{}
	}
	if el, ok := p.last[key]; ok {
		ps.prev = el.Value.(*prefixEntry)
		p.lru.Remove(el)
	}
	p.last[key] = p.lru.PushFront(ps.this)
	return ps
}

// measure sets the share of the call's forwarded context that is a prefix
// of the previous forwarded context of its chain (nil for the first, or
// when that context was let go), once the previous call's is measured, and
// keeps the call's context for the next call. It waits for no other work
// than the chain's, so it never waits on a session's write slot.
func (ps *prefixShare) measure() {
	p := ps.p
	defer close(ps.this.ready)
	body := ps.body
	var prev *prefixEntry
	if ps.prev != nil {
		<-ps.prev.ready
		// Only this call reads or clears its predecessor's context now.
		if ps.prev.body != nil {
			prev = ps.prev
		}
	}
	start, end, same := 0, len(body), -1
	if prev != nil {
		// A session's next body usually repeats the previous one up to the
		// end of its messages array: then only the messages added since
		// are scanned to find where the array ends now.
		cp := str.CommonPrefix(prev.body, body)
		if prev.end-prev.start >= 2 && prev.body[prev.end-1] == ']' && cp >= prev.end-1 {
			if e, ok := transcript.ArrayEnd(body, prev.start, prev.end-1); ok {
				start, end, same = prev.start, e, cp
			}
		}
	}
	if same < 0 {
		if s, e, ok := transcript.Span(body, "messages"); ok && body[s] == '[' {
			start, end = s, e
		}
	}
	ctx := body[start:end]
	if prev != nil {
		common := 0
		if same >= 0 { // both contexts start at start, and the bodies agree up to same
			common = min(same-start, len(ctx))
		} else {
			common = str.CommonPrefix(prev.context(), ctx)
		}
		v := float64(common) / float64(len(ctx))
		ps.share = &v
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ps.prev != nil {
		p.bytes -= len(ps.prev.body)
		ps.prev.body = nil
	}
	if !ps.this.evicted {
		ps.this.body, ps.this.start, ps.this.end = body, start, end
		p.bytes += len(body)
	}
	for p.bytes > maxPrefixBytes && p.lru.Len() > 1 {
		ent := p.lru.Remove(p.lru.Back()).(*prefixEntry)
		delete(p.last, ent.key)
		p.bytes -= len(ent.body)
		ent.body, ent.evicted = nil, true
	}
}
