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
// slices of the calls' own buffers, not copies.
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
	key     string
	context []byte
	ready   chan struct{}
	evicted bool
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
	ctx := ps.body
	if start, end, ok := transcript.Span(ctx, "messages"); ok && ctx[start] == '[' {
		ctx = ctx[start:end]
	}
	if ps.prev != nil {
		<-ps.prev.ready
		// Only this call reads or clears its predecessor's context now.
		if prev := ps.prev.context; prev != nil {
			v := float64(str.CommonPrefix(prev, ctx)) / float64(len(ctx))
			ps.share = &v
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ps.prev != nil {
		p.bytes -= len(ps.prev.context)
		ps.prev.context = nil
	}
	if !ps.this.evicted {
		ps.this.context = ctx
		p.bytes += len(ctx)
	}
	for p.bytes > maxPrefixBytes && p.lru.Len() > 1 {
		ent := p.lru.Remove(p.lru.Back()).(*prefixEntry)
		delete(p.last, ent.key)
		p.bytes -= len(ent.context)
		ent.context, ent.evicted = nil, true
	}
}
