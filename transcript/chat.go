package transcript

import (
	"strings"

	"github.com/tidwall/gjson"
)

// parseChat reads the messages array of an OpenAI chat-completions body.
func parseChat(body []byte) (*Transcript, error) {
	if !gjson.ValidBytes(body) {
		return nil, ErrNotJSON
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, ErrNotObject
	}
	arr := root.Get("messages")
	if !arr.IsArray() || arr.Index <= 0 {
		return nil, ErrNoMessages
	}
	t := &Transcript{
		Format:   OpenAIChat,
		Body:     body,
		arrStart: arr.Index,
		arrEnd:   arr.Index + len(arr.Raw),
	}
	var err error
	arr.ForEach(func(_, v gjson.Result) bool {
		m, e := chatMessage(body, v, len(t.Messages))
		if e != nil {
			err = e
			return false
		}
		t.Messages = append(t.Messages, m)
		return true
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

func chatMessage(body []byte, v gjson.Result, i int) (Message, error) {
	if !v.IsObject() || v.Index <= 0 || v.Index+len(v.Raw) > len(body) {
		return Message{}, ErrBadMessage
	}
	role := v.Get("role")
	if role.Type != gjson.String {
		return Message{}, ErrBadMessage
	}
	m := Message{
		Index:      i,
		Role:       role.String(),
		Raw:        body[v.Index : v.Index+len(v.Raw) : v.Index+len(v.Raw)],
		Text:       contentText(v.Get("content")),
		ToolCallID: v.Get("tool_call_id").String(),
	}
	v.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
		fn := c.Get("function")
		m.ToolCalls = append(m.ToolCalls, ToolCall{
			ID:        c.Get("id").String(),
			Name:      fn.Get("name").String(),
			Arguments: fn.Get("arguments").String(),
		})
		return true
	})
	return m, nil
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
