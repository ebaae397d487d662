package transcript

import (
	"container/list"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/rcm-dev/rcm/internal/str"
)

// Cache keeps the latest transcript of each session so that the session's
// next call, which sends the whole history again with a few messages added
// at its end, is parsed only from where its body departs from the previous
// one: the messages before that point are taken over, moved onto the new
// body, and only the rest of the body is validated and read. The result is
// the transcript Parse would return (TestCacheMatchesParse). Reuse rests on
// bytes alone, never on the key: a key shared by two conversations costs
// only the reuse. The zero value keeps nothing; NewCache sets a budget.
type Cache struct {
	max   int // bytes of bodies kept, least recently used let go first
	mu    sync.Mutex
	last  map[string]*list.Element // key -> element of lru (*cached)
	lru   list.List                // front: most recently used
	bytes int
}

type cached struct {
	key string
	t   *Transcript
}

// NewCache returns a Cache that keeps at most maxBytes of bodies.
func NewCache(maxBytes int) *Cache {
	return &Cache{max: maxBytes, last: map[string]*list.Element{}}
}

// Parse is Parse for a body of the session key ("" keeps nothing), reusing
// what the session's previous body shares with this one. Side calls (a
// title call shares the session but not its history) are not kept.
func (c *Cache) Parse(key string, f Format, body []byte, h Hints) (*Transcript, error) {
	if c == nil || c.max <= 0 || key == "" {
		return Parse(f, body, h)
	}
	c.mu.Lock()
	var prev *Transcript
	if el, ok := c.last[key]; ok {
		prev = el.Value.(*cached).t
	}
	c.mu.Unlock()
	t, err := parseAfter(prev, f, body, h)
	if err == nil && !t.Kind.Side() {
		c.put(key, t)
	}
	return t, err
}

func (c *Cache) put(key string, t *Transcript) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.last[key]; ok {
		c.bytes -= len(el.Value.(*cached).t.Body)
		c.lru.Remove(el)
	}
	c.last[key] = c.lru.PushFront(&cached{key, t})
	c.bytes += len(t.Body)
	for c.bytes > c.max && c.lru.Len() > 0 {
		old := c.lru.Remove(c.lru.Back()).(*cached)
		delete(c.last, old.key)
		c.bytes -= len(old.t.Body)
	}
}

// parseAfter parses body, taking over the messages of prev (nil: none)
// that body repeats byte for byte at the same place, when the rest of body
// continues their array validly.
func parseAfter(prev *Transcript, f Format, body []byte, h Hints) (*Transcript, error) {
	a := adapters[f]
	if prev == nil || a == nil || a.item == nil || prev.Format != f {
		return Parse(f, body, h)
	}
	k, end := prev.shared(body)
	// Parse reports a body that does not continue validly, as it would
	// have anyway.
	if k == 0 || !validAfter(alias(body), end) {
		return Parse(f, body, h)
	}
	t := &Transcript{Format: f, Body: body, arrStart: prev.arrStart, reused: end}
	t.Messages = make([]Message, k, k+(len(body)-end)>>10+4)
	for i := range t.Messages {
		t.Messages[i] = prev.Messages[i].moved(prev.Body, body)
	}
	arr := alias(body)[t.arrStart:]
	stop, err := t.readElements(arr, end-t.arrStart, a.item)
	if err != nil {
		return nil, err
	}
	t.arrEnd = t.arrStart + stop
	if a.extra != nil {
		a.extra(t)
	}
	// Whether a message opens a turn depends on it and the one after it:
	// the turns opened before the last message taken over stand.
	from := k - 1
	var turns []Turn
	if len(prev.fps) == len(prev.Turns) {
		for _, tn := range prev.Turns {
			if tn.Start >= from {
				break
			}
			turns = append(turns, tn)
		}
	}
	var fps []Fingerprint
	if len(turns) == 0 {
		from = 0
	} else {
		fps = slices.Clone(prev.fps[:len(turns)])
	}
	a.finishFrom(t, h, turns, fps, from)
	return t, nil
}

// shared returns how many of t's leading messages body holds byte for
// byte at the same offsets (everything before them included), and the
// offset where the last of them ends.
func (t *Transcript) shared(body []byte) (k, end int) {
	n := str.CommonPrefix(t.Body, body)
	for k < len(t.Messages) {
		m := &t.Messages[k]
		e := m.at + len(m.Raw)
		if m.at <= 0 || e > n {
			break
		}
		k, end = k+1, e
	}
	return k, end
}

// moved returns m as read from body instead of old, which holds the same
// bytes where m lies: its spans of old point into body, so that a
// transcript never keeps an earlier call's body alive.
func (m Message) moved(old, body []byte) Message {
	mv := func(s string) string { return moved(s, old, body) }
	m.Raw = body[m.at : m.at+len(m.Raw) : m.at+len(m.Raw)]
	m.Role, m.ToolCallID, m.content, m.text = mv(m.Role), mv(m.ToolCallID), mv(m.content), mv(m.text)
	if len(m.ToolCalls) > 0 {
		calls := make([]ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			calls[i] = ToolCall{ID: mv(c.ID), Name: mv(c.Name), Arguments: mv(c.Arguments)}
		}
		m.ToolCalls = calls
	}
	if len(m.Results) > 0 {
		results := make([]ToolResult, len(m.Results))
		for i, r := range m.Results {
			results[i] = ToolResult{ID: mv(r.ID), content: mv(r.content)}
		}
		m.Results = results
	}
	return m
}

// moved returns s, when it is a span of old, as the same span of body;
// any other string (a decoded copy) as it is. Parse hands out spans of the
// body instead of copies (see alias), so a message taken over from an
// earlier transcript would otherwise keep that transcript's body alive. A
// span past the end of body (which the caller rules out) becomes a copy.
func moved(s string, old, body []byte) string {
	if len(s) == 0 || len(old) == 0 {
		return s
	}
	p, o := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(old)))
	if p < o || p+uintptr(len(s)) > o+uintptr(len(old)) {
		return s
	}
	off := int(p - o)
	if off+len(s) > len(body) {
		return strings.Clone(s)
	}
	return alias(body[off : off+len(s)])
}
