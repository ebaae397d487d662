package proxy

import (
	"cmp"
	"container/list"
	"encoding/json"
	"slices"
	"sync"
	"time"

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
	e.Client = a.client
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

// DefaultCacheTTL is how long a provider's prompt cache keeps a prefix
// after its last use, when Config.CacheTTL is zero: five minutes, as
// Anthropic's default cache and OpenAI's prompt caching have it.
const DefaultCacheTTL = 5 * time.Minute

// prefixes holds each session's recent forwarded contexts (the messages
// array) to measure how much of the next one a provider's prompt cache
// would serve: the longest prefix it shares, byte for byte, with any of
// them used within the cache's lifetime. Only the messages count: the
// fields around them (tools, options) are forwarded unchanged, and a
// provider renders the tools before the messages anyway. A context that
// a later one extends serves nothing the later one does not, so it is let
// go: within a run of one task a chain holds one context, and one more per
// task it left. The contexts are slices of the calls' own buffers, not
// copies; the bytes counted are the buffers'.
type prefixes struct {
	ttl   time.Duration // 0: DefaultCacheTTL
	mu    sync.Mutex
	last  map[string]*list.Element // chain key -> element of lru (*chain)
	lru   list.List                // front: most recently used
	bytes int
}

// chain is a session's calls in one mode: the latest call to take its
// place, and the contexts a cache may still hold.
type chain struct {
	key    string
	latest *prefixEntry
	recent []*prefixEntry
}

// prefixEntry is one call's place in its chain: ready is closed once its
// share is measured and its context kept (or not); at is when the
// context was last sent or served from.
type prefixEntry struct {
	// body is the call's forwarded body and [start:end] its context in it.
	body       []byte
	start, end int
	at         time.Time
	ready      chan struct{}
}

// context is the entry's forwarded context.
func (e *prefixEntry) context() []byte { return e.body[e.start:e.end] }

// prefixShare is a call's place in its chain, taken when its answer has
// gone out; measure computes the share off the response path.
type prefixShare struct {
	p          *prefixes
	ch         *chain
	prev, this *prefixEntry // prev nil: the first of the chain
	share      *float64     // measure's result, once this.ready is closed
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
	ps := &prefixShare{p: p, this: &prefixEntry{body: a.body, at: time.Now(), ready: make(chan struct{})}}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[string]*list.Element{}
	}
	if el, ok := p.last[key]; ok {
		ps.ch = el.Value.(*chain)
		p.lru.MoveToFront(el)
	} else {
		ps.ch = &chain{key: key}
		p.last[key] = p.lru.PushFront(ps.ch)
	}
	ps.prev, ps.ch.latest = ps.ch.latest, ps.this
	return ps
}

// measure sets the share of the call's forwarded context that is a prefix
// of one its chain's cache may hold (nil for the first of the chain, or
// when the contexts were let go; 0 when they all outlived the cache), once
// the previous call's is measured, and keeps the call's context for the
// next calls. It waits for no other work than the chain's, so it never
// waits on a session's writes.
func (ps *prefixShare) measure() {
	p, this := ps.p, ps.this
	defer close(this.ready)
	if ps.prev != nil {
		<-ps.prev.ready
	}
	// Only this call changes the chain's contexts now; another chain's
	// call may let them go, so work on a copy of the list.
	p.mu.Lock()
	recent := slices.Clone(ps.ch.recent)
	p.mu.Unlock()
	body := this.body
	start, end, same := 0, len(body), -1
	if n := len(recent); n > 0 && recent[n-1] == ps.prev {
		// A session's next body usually repeats the previous one up to the
		// end of its messages array: then only the messages added since
		// are scanned to find where the array ends now.
		prev := ps.prev
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
	this.start, this.end = start, end
	ctx := body[start:end]
	ttl := cmp.Or(p.ttl, DefaultCacheTTL)
	best := -1
	common := make([]int, len(recent)) // -1: the cache has let it go
	for i, e := range recent {
		switch {
		case this.at.Sub(e.at) > ttl:
			common[i] = -1
			best = max(best, 0)
			continue
		case same >= 0 && i == len(recent)-1: // both contexts start at start, and the bodies agree up to same
			common[i] = min(same-start, len(ctx))
		default:
			common[i] = str.CommonPrefix(e.context(), ctx)
		}
		best = max(best, common[i])
	}
	if best >= 0 {
		v := float64(best) / float64(len(ctx))
		ps.share = &v
	}
	var keep []*prefixEntry
	for i, e := range recent {
		// Gone from the cache, or extended by this context (all of it
		// but its closing bracket repeated): no longer of use.
		if c := common[i]; c >= 0 && c < len(e.context())-1 {
			if c == best && c > 0 {
				e.at = this.at // the cache served it: its lifetime starts again
			}
			keep = append(keep, e)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.last[ps.ch.key]; !ok || el.Value != ps.ch {
		return // let go meanwhile
	}
	for _, e := range ps.ch.recent {
		p.bytes -= len(e.body)
	}
	ps.ch.recent = append(keep, this)
	for _, e := range ps.ch.recent {
		p.bytes += len(e.body)
	}
	for p.bytes > maxPrefixBytes && p.lru.Len() > 1 {
		ch := p.lru.Remove(p.lru.Back()).(*chain)
		delete(p.last, ch.key)
		for _, e := range ch.recent {
			p.bytes -= len(e.body)
		}
		ch.recent = nil
	}
}
