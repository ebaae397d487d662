package transcript

import (
	"strings"

	"github.com/tidwall/gjson"
)

// messagesReply reads an Anthropic Messages answer: one message object
// (its text and tool_use blocks), or the event stream, whose blocks it
// reassembles by index from content_block_start and the text_delta and
// input_json_delta deltas. Thinking is not part of the reply's text.
func messagesReply(body []byte, sse bool, m *Message) {
	if !sniffSSE(body, sse) {
		var text strings.Builder
		gjson.GetBytes(body, "content").ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "text":
				text.WriteString(b.Get("text").String())
			case "tool_use":
				if len(m.ToolCalls) < maxReplyCalls {
					m.ToolCalls = append(m.ToolCalls, ToolCall{ID: b.Get("id").String(), Name: b.Get("name").String(), Arguments: b.Get("input").Raw})
				}
			}
			return true
		})
		m.text = text.String()
		return
	}
	type block struct {
		call     bool
		call0    ToolCall
		text     strings.Builder
		partials bool
	}
	var blocks []*block
	at := func(v gjson.Result) *block {
		i := int(v.Get("index").Int())
		if i < 0 || i >= maxReplyCalls*4 {
			return nil
		}
		for len(blocks) <= i {
			blocks = append(blocks, nil)
		}
		if blocks[i] == nil {
			blocks[i] = &block{}
		}
		return blocks[i]
	}
	events(body, func(d []byte) {
		if !gjson.ValidBytes(d) {
			return
		}
		v := gjson.ParseBytes(d)
		switch v.Get("type").Str {
		case "content_block_start":
			b, cb := at(v), v.Get("content_block")
			if b == nil {
				return
			}
			switch cb.Get("type").Str {
			case "tool_use":
				b.call = true
				b.call0 = ToolCall{ID: cb.Get("id").String(), Name: cb.Get("name").String(), Arguments: cb.Get("input").Raw}
			case "text":
				b.text.WriteString(cb.Get("text").String())
			}
		case "content_block_delta":
			b, dl := at(v), v.Get("delta")
			if b == nil {
				return
			}
			switch dl.Get("type").Str {
			case "text_delta":
				b.text.WriteString(dl.Get("text").String())
			case "input_json_delta":
				// The start's input is an empty placeholder once deltas come.
				b.partials = true
				b.text.WriteString(dl.Get("partial_json").String())
			}
		}
	})
	var text strings.Builder
	for _, b := range blocks {
		switch {
		case b == nil:
		case b.call:
			if b.partials {
				b.call0.Arguments = b.text.String()
			}
			if len(m.ToolCalls) < maxReplyCalls {
				m.ToolCalls = append(m.ToolCalls, b.call0)
			}
		default:
			text.WriteString(b.text.String())
		}
	}
	m.text = text.String()
}
