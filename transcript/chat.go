package transcript

import (
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// parseChat reads the messages array of an OpenAI chat-completions body.
func parseChat(body []byte) (*Transcript, error) {
	return parseArray(body, OpenAIChat, chatItem)
}

// chatItem reads a chat message (see readMessage).
func chatItem(m *Message, rest string) (int, error) {
	n, err := readMessage(m, rest, chatField)
	if err == nil && m.Role == "user" && CodexContext(m.Text()) {
		// Codex speaks chat completions too (a provider's wire_api
		// "chat"): its context and summary are what they are on the
		// Responses wire.
		m.Role = "developer"
	}
	return n, err
}

// parseArray reads the "messages" array of a JSON object body of format f,
// each element through item.
func parseArray(body []byte, f Format, item func(m *Message, rest string) (int, error)) (*Transcript, error) {
	t, arr, err := parseMember(body, f, `"messages"`)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(arr, "[") {
		return nil, ErrNoMessages
	}
	if err = t.readArray(arr, item); err != nil {
		return nil, err
	}
	return t, nil
}

// parseMember checks that body is a JSON object and returns a Transcript of
// format f whose array span is the value of the member key (quoted), and
// that value; ErrNoMessages when there is no such member.
func parseMember(body []byte, f Format, key string) (*Transcript, string, error) {
	src := alias(body)
	if !valid(src) {
		return nil, "", ErrNotJSON
	}
	// From here on the body is known to be valid JSON: the members and
	// elements scanners skip values without decoding them.
	start := 0
	for start < len(src) && isSpace(src[start]) {
		start++
	}
	if start == len(src) || src[start] != '{' {
		return nil, "", ErrNotObject
	}
	val, at := "", -1
	members(src, func(k, v string, off int) bool {
		if k == key {
			val, at = v, off
		}
		return at < 0
	})
	if at < 0 {
		return nil, "", ErrNoMessages
	}
	return &Transcript{Format: f, Body: body, arrStart: at, arrEnd: at + len(val)}, val, nil
}

// readArray appends to t.Messages each element of arr, the array at
// t.arrStart, read through message into its place (Index set, then Raw
// and at from the length message returns); message gets the rest of arr
// from the element on.
func (t *Transcript) readArray(arr string, message func(m *Message, rest string) (int, error)) error {
	// About one message a kilobyte: a long session's array grows once or
	// twice instead of a dozen times.
	t.Messages = make([]Message, 0, len(arr)>>10+4)
	_, err := t.readElements(arr, 0, message)
	return err
}

// readElements is readArray from index i of arr on (see elements); it
// returns the index just past the array.
func (t *Transcript) readElements(arr string, i int, message func(m *Message, rest string) (int, error)) (int, error) {
	var err error
	end := elements(arr, i, func(rest string, off int) int {
		if err != nil {
			return len(rest)
		}
		if n := len(t.Messages); n == cap(t.Messages) && n > 0 && off > 0 {
			// Room for the rest of arr at the messages' average size so
			// far, not append's doubling: a Message is 160 bytes, and
			// doubling a slice sized one per kilobyte cost a fifth of a
			// 100 KB body.
			grown := make([]Message, n, n+(len(arr)-off)*n/off+n/8+4)
			copy(grown, t.Messages)
			t.Messages = grown
		}
		t.Messages = append(t.Messages, Message{Index: len(t.Messages)})
		m := &t.Messages[len(t.Messages)-1]
		var n int
		if n, err = message(m, rest); err == nil {
			m.at = t.arrStart + off
			m.Raw = t.Body[m.at : m.at+n : m.at+n]
		}
		return n
	})
	return end, err
}

// readMessage reads the element of a messages array that opens rest into
// m, and returns its length: an object with a string role, whose other
// members field reads.
func readMessage(m *Message, rest string, field func(m *Message, key, val string, off int)) (int, error) {
	if !strings.HasPrefix(rest, "{") {
		return 0, ErrBadMessage
	}
	hasRole := false
	n := members(rest, func(key, val string, off int) bool {
		if key != `"role"` {
			field(m, key, val, off)
		} else if r := gjson.Parse(val); r.Type == gjson.String {
			m.Role, hasRole = r.Str, true
		}
		return true
	})
	if !hasRole {
		return 0, ErrBadMessage
	}
	return n, nil
}

// chatField reads a chat message's content (left encoded), tool calls and
// tool_call_id.
func chatField(m *Message, key, val string, off int) {
	switch key {
	case `"content"`:
		m.content, m.contentAt = val, off
	case `"tool_call_id"`:
		m.ToolCallID = gjson.Parse(val).String()
	case `"tool_calls"`:
		gjson.Parse(val).ForEach(func(_, c gjson.Result) bool {
			m.ToolCalls = append(m.ToolCalls, toolCall(c))
			return true
		})
	}
}

// contentText flattens a content field: a string, or an array of parts of
// which the text ones ("text", "input_text", "output_text") count.
func contentText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.String()
	}
	if !c.IsArray() {
		return ""
	}
	var b strings.Builder
	c.ForEach(func(_, p gjson.Result) bool {
		if p.Type == gjson.String {
			writeJoined(&b, p.String())
			return true
		}
		if t := p.Get("text"); t.Type == gjson.String {
			writeJoined(&b, t.String())
		}
		return true
	})
	return b.String()
}

func writeJoined(b *strings.Builder, s string) {
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	b.WriteString(s)
}

// toolCall reads {"id", "function": {"name", "arguments"}} in one pass over
// each object.
func toolCall(c gjson.Result) ToolCall {
	var tc ToolCall
	c.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			tc.ID = v.String()
		case "function":
			v.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "name":
					tc.Name = v.String()
				case "arguments":
					tc.Arguments = v.String()
				}
				return true
			})
		}
		return true
	})
	return tc
}

// alias views body as a string without copying it: gjson then hands out
// substrings of the body itself (Raw spans, unescaped-free strings) instead
// of copies of a 1 MB history. Safe because a Transcript never outlives
// its body and nobody writes to the body while it is parsed (doc.go).
func alias(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
