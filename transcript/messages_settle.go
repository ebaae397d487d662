package transcript

import (
	"bytes"
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// settleMessages makes an Edit of a Messages body valid and cache-stable:
//   - a user message inserted before a user message that opens with
//     tool_result blocks is folded into it after those blocks, since
//     results must come first in the user message that follows their
//     tool_use;
//   - each cache_control breakpoint of a dropped message moves to the last
//     block of the nearest kept message before it, so that the routed
//     prefix up to there is still cached. Breakpoints only move, so a
//     request never gets more of them (the API allows 4) than it was sent.
func settleMessages(t *Transcript, e Edit) (Edit, error) {
	kept := make([]bool, len(t.Messages))
	for _, k := range e.Keep {
		if k >= 0 && k < len(kept) {
			kept[k] = true
		}
	}
	// The caller's map stays its own: breakpoints and folds go in a copy.
	replace := make(map[int][]byte, len(e.Replace)+1)
	for k, v := range e.Replace {
		replace[k] = v
	}
	e.Replace = replace
	ins, err := foldInserts(t, &e, kept)
	if err != nil {
		return e, err
	}
	e.Insert = ins
	for i := range t.Messages {
		if kept[i] || !bytes.Contains(t.Messages[i].Raw, []byte(`"cache_control"`)) {
			continue
		}
		gjson.GetBytes(t.Messages[i].Raw, "content").ForEach(func(_, b gjson.Result) bool {
			if cc := b.Get("cache_control"); cc.Exists() {
				moveBreakpoint(t, &e, kept, i, []byte(cc.Raw))
			}
			return true
		})
	}
	return e, nil
}

// foldInserts returns the inserts that stay separate messages, folding the
// others into the kept tool_result message they were to precede.
func foldInserts(t *Transcript, e *Edit, kept []bool) ([]Insert, error) {
	var out []Insert
	for _, in := range e.Insert {
		b := in.Before
		if b < 0 || b >= len(t.Messages) || !kept[b] || t.Messages[b].Role != "user" ||
			gjson.GetBytes(in.Raw, "role").Str != "user" {
			out = append(out, in)
			continue
		}
		raw := t.raw(b, e.Replace)
		if !firstBlockIs(raw, "tool_result") {
			out = append(out, in)
			continue
		}
		folded, err := foldUser(raw, in.Raw)
		if err != nil {
			return nil, err
		}
		e.Replace[b] = folded
	}
	return out, nil
}

// foldUser puts the content of the user message add into the user message
// raw, right after raw's leading tool_result blocks.
func foldUser(raw, add []byte) ([]byte, error) {
	blocks := contentBlocks(gjson.GetBytes(add, "content"))
	if len(blocks) == 0 {
		return raw, nil
	}
	var arr bytes.Buffer
	arr.WriteByte('[')
	n, placed := 0, false
	put := func(b string) {
		if n > 0 {
			arr.WriteByte(',')
		}
		arr.WriteString(b)
		n++
	}
	gjson.GetBytes(raw, "content").ForEach(func(_, b gjson.Result) bool {
		if !placed && b.Get("type").Str != "tool_result" {
			for _, nb := range blocks {
				put(nb)
			}
			placed = true
		}
		put(b.Raw)
		return true
	})
	if !placed {
		for _, nb := range blocks {
			put(nb)
		}
	}
	arr.WriteByte(']')
	out, err := sjson.SetRawBytes(raw, "content", arr.Bytes())
	if err != nil {
		return nil, fmt.Errorf("transcript: fold record into tool results: %w", err)
	}
	return out, nil
}

// contentBlocks returns a content field as raw blocks: a non-empty string
// becomes one text block (the API rejects empty ones).
func contentBlocks(c gjson.Result) []string {
	if c.Type == gjson.String {
		if c.Str == "" {
			return nil
		}
		return []string{`{"type":"text","text":` + c.Raw + `}`}
	}
	var out []string
	c.ForEach(func(_, b gjson.Result) bool {
		out = append(out, b.Raw)
		return true
	})
	return out
}

// moveBreakpoint puts the breakpoint cc of dropped message i on the last
// block of the nearest kept message before it that can carry one and does
// not already; with none, the breakpoint goes with its message.
func moveBreakpoint(t *Transcript, e *Edit, kept []bool, i int, cc []byte) {
	for j := i - 1; j >= 0; j-- {
		if !kept[j] {
			continue
		}
		if raw, ok := withBreakpoint(t.raw(j, e.Replace), cc); ok {
			e.Replace[j] = raw
			return
		}
	}
}

// withBreakpoint returns raw with cache_control cc on its last content
// block: a string content becomes one text block. ok is false when the
// last block already has one, cannot have one (thinking) or the content is
// empty.
func withBreakpoint(raw, cc []byte) ([]byte, bool) {
	c := gjson.GetBytes(raw, "content")
	if c.Type == gjson.String {
		if c.Str == "" {
			return nil, false
		}
		block := `{"type":"text","text":` + c.Raw + `,"cache_control":` + string(cc) + `}`
		out, err := sjson.SetRawBytes(raw, "content", []byte("["+block+"]"))
		return out, err == nil
	}
	n := int(c.Get("#").Int())
	if n == 0 {
		return nil, false
	}
	last := c.Get(fmt.Sprint(n - 1))
	switch last.Get("type").Str {
	case "thinking", "redacted_thinking":
		return nil, false
	}
	if last.Get("cache_control").Exists() {
		return nil, false
	}
	out, err := sjson.SetRawBytes(raw, fmt.Sprintf("content.%d.cache_control", n-1), cc)
	return out, err == nil
}
