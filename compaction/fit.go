package compaction

import (
	"strconv"
	"unicode/utf8"

	"github.com/rcm-dev/rcm/internal/str"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Report says what Fit did.
type Report struct {
	TokensBefore int // estimated tokens of the body e would build
	TokensAfter  int // estimated tokens of the body the returned Edit builds
	Condensed    int // kept turns whose long messages were cut
	Dropped      int // turns dropped whole
}

// Cutting: a tool output or assistant text longer than longText bytes keeps
// its first keepHead and last keepTail bytes (errors and summaries sit at
// either end) around a marker saying how much was cut.
const (
	longText = 4096
	keepHead = 1536
	keepTail = 1024
)

// Fit returns e changed so that the body it builds from t stays within
// budget estimated tokens (budget 0: no limit), and what it did. current is
// the index in t.Turns of the turn the call is about; only the kept turns
// before it are touched, oldest first:
//
//  1. request turns are condensed, one at a time: long tool outputs and
//     long assistant texts are cut (see cut); requests and other user
//     messages, system messages, tool calls and messages e already
//     replaces stay as they are; a post-compaction summary is already
//     condensed and stays whole;
//  2. only if that is not enough, dropped whole, request turns before the
//     post-compaction summary turns, so a tool call never loses its
//     result. System messages and inserted messages always stay.
//
// Both keep what successive calls forward append-only as long as they can
// (a provider's prompt cache keeps hitting): condensing goes oldest first,
// so a growing conversation only moves the line between condensed and
// whole turns forward; dropping, which changes the start of the context,
// goes in steps: it frees the excess rounded up to a whole step of a
// quarter of the budget, so the same turns stay dropped until the
// condensed history has grown by about a step.
//
// Dropping turns takes what the history held out of it: when it must drop,
// Fit drops down to budget less reserve instead, keeping room for what the
// caller puts before the first kept turn then (rcm's task record).
//
// When even that leaves the body over budget (a huge current turn), Fit
// returns its best and TokensAfter says by how much it missed. Fit never
// modifies e; the same inputs give the same Edit.
func Fit(t *transcript.Transcript, e transcript.Edit, budget, reserve, current int) (transcript.Edit, Report) {
	f := newFitter(t, e)
	rep := Report{TokensBefore: Estimate(f.size())}
	rep.TokensAfter = rep.TokensBefore
	if budget <= 0 || rep.TokensBefore <= budget || f.bad {
		return e, rep
	}
	limit := budget * bytesPerToken // Estimate(n) <= budget iff n <= limit

	var older []int // kept turns before current, oldest first
	for ti := 0; ti < len(t.Turns) && ti < current; ti++ {
		if f.turnKept[ti] {
			older = append(older, ti)
		}
	}
	condensed := make(map[int]bool)
	for _, ti := range older {
		if f.size() <= limit {
			break
		}
		if t.Turns[ti].Kind == transcript.Request && f.condense(ti) {
			condensed[ti] = true
		}
	}
	if f.size() > limit {
		// Every older turn is condensed: the rest is dropped, to the
		// budget less reserve. (The condensing above would have gone as
		// far for that budget.)
		limit = max(budget-reserve, 0) * bytesPerToken
		excess := f.size() - limit
		step := max(limit/4, 1)
		limit = max(f.size()-(excess+step-1)/step*step, 0)
	}
	for _, kind := range []transcript.TurnKind{transcript.Request, transcript.Summary} {
		for _, ti := range older {
			if f.size() <= limit {
				break
			}
			if t.Turns[ti].Kind == kind {
				f.drop(ti)
				delete(condensed, ti)
				rep.Dropped++
			}
		}
	}
	rep.Condensed = len(condensed)
	rep.TokensAfter = Estimate(f.size())
	if rep.Condensed == 0 && rep.Dropped == 0 {
		return e, rep
	}
	out := transcript.Edit{Insert: e.Insert, Replace: f.replace}
	for _, k := range e.Keep {
		if f.kept[k] {
			out.Keep = append(out.Keep, k)
		}
	}
	return out, rep
}

// fitter tracks the size of the body an Edit builds while Fit changes it.
type fitter struct {
	t        *transcript.Transcript
	base     int    // bytes outside the messages array's elements and commas
	bytes    int    // bytes of the elements the Edit puts in the array
	count    int    // number of those elements
	kept     []bool // per message
	turnKept []bool // per turn: some non-system message kept
	replace  map[int][]byte
	copied   bool // replace is Fit's own copy
	bad      bool // e refers to messages t does not have
}

func newFitter(t *transcript.Transcript, e transcript.Edit) *fitter {
	f := &fitter{
		t:        t,
		base:     len(t.Body),
		kept:     make([]bool, len(t.Messages)),
		turnKept: make([]bool, len(t.Turns)),
		replace:  e.Replace,
	}
	// Harnesses send compact JSON; whitespace inside the array counts as
	// base, so the size is exact for compact bodies and a slight
	// overestimate otherwise.
	for i := range t.Messages {
		f.base -= len(t.Messages[i].Raw)
	}
	if n := len(t.Messages); n > 1 {
		f.base -= n - 1
	}
	for _, k := range e.Keep {
		if k < 0 || k >= len(t.Messages) || f.kept[k] {
			f.bad = true
			continue
		}
		f.kept[k] = true
		f.add(len(f.raw(k)))
	}
	for _, in := range e.Insert {
		f.add(len(in.Raw))
	}
	for ti, tr := range t.Turns {
		for i := tr.Start; i < tr.End && i < len(f.kept); i++ {
			if f.kept[i] && !t.Messages[i].System() {
				f.turnKept[ti] = true
				break
			}
		}
	}
	return f
}

func (f *fitter) add(n int) { f.bytes += n; f.count++ }

func (f *fitter) size() int {
	if f.count > 1 {
		return f.base + f.bytes + f.count - 1
	}
	return f.base + f.bytes
}

func (f *fitter) raw(i int) []byte {
	if r, ok := f.replace[i]; ok {
		return r
	}
	return f.t.Messages[i].Raw
}

func (f *fitter) setReplace(i int, raw []byte) {
	if !f.copied {
		m := make(map[int][]byte, len(f.replace)+8)
		for k, v := range f.replace {
			m[k] = v
		}
		f.replace, f.copied = m, true
	}
	if raw == nil {
		delete(f.replace, i)
	} else {
		f.replace[i] = raw
	}
}

// condense cuts the long tool outputs and assistant texts of turn ti and
// reports whether it cut any.
func (f *fitter) condense(ti int) bool {
	tr := f.t.Turns[ti]
	cutAny := false
	for i := tr.Start; i < tr.End; i++ {
		m := &f.t.Messages[i]
		// Decoding never lengthens text: a short raw message is short.
		if !f.kept[i] || len(m.Raw) <= longText {
			continue
		}
		if _, replaced := f.replace[i]; replaced {
			continue
		}
		if f.t.Format == transcript.AnthropicMessages {
			// Tool calls and results are blocks of the content: cut
			// inside the blocks so that every pair stays whole.
			if raw, ok := condenseBlocks(m.Raw, m.Role == "assistant"); ok {
				f.bytes -= len(m.Raw) - len(raw)
				f.setReplace(i, raw)
				cutAny = true
			}
			continue
		}
		var what string
		switch m.Role {
		case "tool":
			what = "tool output"
		case "assistant":
			what = "assistant text"
		default:
			continue
		}
		if f.t.Format == transcript.OpenAIChat {
			if raw, handled := cutContent(m, what); handled {
				if raw != nil && len(raw) < len(m.Raw) {
					f.bytes -= len(m.Raw) - len(raw)
					f.setReplace(i, raw)
					cutAny = true
				}
				continue
			}
		}
		text := m.Text()
		if len(text) <= longText {
			continue
		}
		field := "content"
		if f.t.Format == transcript.OpenAIResponses && m.Role == "tool" {
			field = "output" // a Responses tool output item carries its text there
		}
		raw, err := withText(m.Raw, field, cut(text, what))
		if err != nil || len(raw) >= len(m.Raw) {
			continue
		}
		f.bytes -= len(m.Raw) - len(raw)
		f.setReplace(i, raw)
		cutAny = true
	}
	return cutAny
}

// drop removes every non-system message of turn ti.
func (f *fitter) drop(ti int) {
	tr := f.t.Turns[ti]
	for i := tr.Start; i < tr.End; i++ {
		if !f.kept[i] || f.t.Messages[i].System() {
			continue
		}
		f.bytes -= len(f.raw(i))
		f.count--
		f.kept[i] = false
		if _, ok := f.replace[i]; ok {
			f.setReplace(i, nil)
		}
	}
	f.turnKept[ti] = false
}

// cut keeps the head and tail of s around a marker saying how many of its
// bytes were cut; cuts fall on rune boundaries.
func cut(s, what string) string {
	return cutEnds(s[:keepHead+1], s[len(s)-keepTail:], len(s), what)
}

// cutEnds is cut of a text of n bytes given only its first keepHead+1 and
// last keepTail bytes.
func cutEnds(first, last string, n int, what string) string {
	head, tail := keepHead, 0
	for head > 0 && !utf8.RuneStart(first[head]) {
		head--
	}
	for tail < len(last) && !utf8.RuneStart(last[tail]) {
		tail++
	}
	return first[:head] + "\n[rcm: cut " + strconv.Itoa(n-len(last)+tail-head) + " of " + strconv.Itoa(n) +
		" bytes of " + what + "]\n" + last[tail:]
}

// cutContent is condense's way for a chat message whose content is a
// JSON string free of \u escapes (tool output as harnesses send it): it
// decodes only the ends that stay (transcript.Message.TextEnds) and
// splices the cut text in place of the content, as withText would,
// instead of decoding and re-reading the whole. It returns nil when the
// text is not long; handled is false for any other message, which takes
// the general way.
func cutContent(m *transcript.Message, what string) (out []byte, handled bool) {
	first, last, n, ok := m.TextEnds(keepHead+1, keepTail)
	c, off, _ := m.Content()
	if !ok {
		return nil, false
	}
	if n <= longText {
		return nil, true
	}
	q := str.Quote(cutEnds(first, last, n, what))
	out = make([]byte, 0, len(m.Raw)-len(c)+len(q))
	out = append(out, m.Raw[:off]...)
	out = append(out, q...)
	return append(out, m.Raw[off+len(c):]...), true
}

// condenseBlocks cuts, in an Anthropic message, the long texts of its
// tool_result blocks (tool output, a string or text blocks) and, in an
// assistant's, of its text blocks (a user's are its requests); every block
// and field else keeps its bytes. It reports false when nothing was cut.
func condenseBlocks(raw []byte, assistant bool) ([]byte, bool) {
	out, cutAny := raw, false
	set := func(path, text, what string) {
		if len(text) <= longText {
			return
		}
		if o, err := sjson.SetRawBytes(out, path, str.Quote(cut(text, what))); err == nil {
			out, cutAny = o, true
		}
	}
	for i, b := range gjson.GetBytes(raw, "content").Array() {
		p := "content." + strconv.Itoa(i)
		switch b.Get("type").Str {
		case "text":
			if assistant {
				set(p+".text", b.Get("text").Str, "assistant text")
			}
		case "tool_result":
			c := b.Get("content")
			if c.Type == gjson.String {
				set(p+".content", c.Str, "tool output")
				continue
			}
			for j, cb := range c.Array() {
				if cb.Get("type").Str == "text" {
					set(p+".content."+strconv.Itoa(j)+".text", cb.Get("text").Str, "tool output")
				}
			}
		}
	}
	return out, cutAny && len(out) < len(raw)
}
