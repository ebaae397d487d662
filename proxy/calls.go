package proxy

import (
	"container/list"
	"encoding/json"
	"sync"
	"unsafe"

	"github.com/rcm-dev/rcm/compaction"
	"github.com/rcm-dev/rcm/memory"
	"github.com/tidwall/gjson"
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

type prefixEntry struct {
	key     string
	context []byte
}

// share returns the share of a's forwarded context that is a prefix of the
// previous forwarded context of the session in the same mode (nil for the
// first, or when that context was let go), and keeps a's context for the
// next call. Side calls (title, compaction) neither count nor break the
// chain. Native mode does not parse bodies that name their session, so
// there a side call cannot be told apart and does take part; keeping one
// chain per mode keeps such a call (OpenCode sends its title call through
// a native provider) out of a routed session's chain.
func (p *prefixes) share(a *assembly) *float64 {
	if a.session == "" || len(a.body) == 0 || a.transcript != nil && a.transcript.Kind.Side() {
		return nil
	}
	key := string(a.mode) + " " + a.session
	// gjson.GetBytes would copy the array it finds (a megabyte, in a long
	// session); the body is never written to after it was built, so it
	// can be read as a string in place.
	ctx := a.body
	if m := gjson.Get(unsafe.String(unsafe.SliceData(a.body), len(a.body)), "messages"); m.IsArray() && m.Index > 0 {
		ctx = a.body[m.Index : m.Index+len(m.Raw)]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[string]*list.Element{}
	}
	var s *float64
	if el, ok := p.last[key]; ok {
		ent := el.Value.(*prefixEntry)
		v := float64(commonPrefix(ent.context, ctx)) / float64(len(ctx))
		s = &v
		p.bytes += len(ctx) - len(ent.context)
		ent.context = ctx
		p.lru.MoveToFront(el)
	} else {
		p.last[key] = p.lru.PushFront(&prefixEntry{key, ctx})
		p.bytes += len(ctx)
	}
	for p.bytes > maxPrefixBytes && p.lru.Len() > 1 {
		ent := p.lru.Remove(p.lru.Back()).(*prefixEntry)
		delete(p.last, ent.key)
		p.bytes -= len(ent.context)
	}
	return s
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	// Compare in blocks first: the common prefix is usually most of it.
	const block = 4096
	i := 0
	for i+block <= n && string(a[i:i+block]) == string(b[i:i+block]) {
		i += block
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}
