package replay

import (
	"bytes"
	"strings"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/tidwall/gjson"
)

// responsesItems encodes a chat message as the Responses API's input items,
// joined by commas: a message's text as a message item of string content
// (the API's short form, {role, content}, which is byte for byte the chat
// message, so that byte shares such as contamination compare across APIs),
// each of an assistant's tool calls as a function_call item (arguments verbatim,
// as the string they are), a tool result as a function_call_output item.
// One chat message may so become several items; the replay matches them
// back as one (see parseItems).
func responsesItems(m chat.Message) []byte {
	var b bytes.Buffer
	q := func(s string) { writeString(&b, s) }
	switch {
	case m.Role == chat.RoleTool:
		b.WriteString(`{"type":"function_call_output","call_id":`)
		q(m.ToolCallID)
		b.WriteString(`,"output":`)
		q(m.Content)
		b.WriteByte('}')
	case m.Role == chat.RoleAssistant:
		if m.Content != "" || len(m.ToolCalls) == 0 {
			b.WriteString(`{"role":"assistant","content":`)
			q(m.Content)
			b.WriteByte('}')
		}
		for _, c := range m.ToolCalls {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"type":"function_call","call_id":`)
			q(c.ID)
			b.WriteString(`,"name":`)
			q(c.Function.Name)
			b.WriteString(`,"arguments":`)
			q(c.Function.Arguments)
			b.WriteByte('}')
		}
	default:
		b.WriteString(`{"role":`)
		q(m.Role)
		b.WriteString(`,"content":`)
		q(m.Content)
		b.WriteByte('}')
	}
	return b.Bytes()
}

// responsesTools converts chat tools to the Responses API's flat function
// tools ([{type, name, description, parameters}]).
func responsesTools(chatBody []byte) []byte {
	return convertTools(chatBody, func(b *bytes.Buffer, fn gjson.Result) {
		b.WriteString(`{"type":"function","name":`)
		b.WriteString(fn.Get("name").Raw)
		if d := fn.Get("description"); d.Exists() {
			b.WriteString(`,"description":`)
			b.WriteString(d.Raw)
		}
		if p := fn.Get("parameters"); p.IsObject() {
			b.WriteString(`,"parameters":`)
			b.WriteString(p.Raw)
		}
		b.WriteByte('}')
	})
}

// responsesBody converts a whole chat body the bench built (the compaction
// call) to the Responses API: its messages as items, model and the token
// limit kept, streamed.
func responsesBody(chatBody []byte) ([]byte, error) {
	return convertBody(chatBody, "max_output_tokens", "input", func(m chat.Message) ([]byte, error) { return responsesItems(m), nil })
}

// parseItems decodes a Responses input array into the chat messages it
// stands for. Items that begin, byte for byte, the encoding of a message
// the replay sent (known, keyed by the first item; see responsesItems) are
// that message when the items after them match too. Other items are
// decoded one by one, an assistant's message item and the function_call
// items after it (or a run of function_call items) as one message, as the
// chat API carries them.
func parseItems(items gjson.Result, known map[string]knownItems) []Forwarded {
	var all []gjson.Result
	items.ForEach(func(_, it gjson.Result) bool {
		all = append(all, it)
		return true
	})
	var out []Forwarded
	var pending *chat.Message // an assistant message still open to function_call items
	pendingBytes := 0
	flush := func() {
		if pending != nil {
			out = append(out, Forwarded{Role: pending.Role, Text: messageText(*pending), Key: messageKey(*pending), Bytes: pendingBytes})
			pending, pendingBytes = nil, 0
		}
	}
	for i := 0; i < len(all); i++ {
		if k, ok := known[all[i].Raw]; ok && i+k.n <= len(all) {
			raws := make([]string, k.n)
			for j := range raws {
				raws[j] = all[i+j].Raw
			}
			if strings.Join(raws, ",") == k.raw {
				flush()
				out = append(out, k.f)
				i += k.n - 1
				continue
			}
		}
		it := all[i]
		switch it.Get("type").Str {
		case "function_call", "custom_tool_call":
			if pending == nil {
				pending = &chat.Message{Role: chat.RoleAssistant}
			} else {
				pendingBytes++ // the comma, as a known message counts it
			}
			args := it.Get("arguments")
			if !args.Exists() {
				args = it.Get("input")
			}
			pending.ToolCalls = append(pending.ToolCalls, chat.ToolCall{ID: it.Get("call_id").String(), Type: "function",
				Function: chat.FunctionCall{Name: it.Get("name").String(), Arguments: args.String()}})
			pendingBytes += len(it.Raw)
			continue
		case "function_call_output", "custom_tool_call_output":
			flush()
			out = append(out, Forwarded{Role: chat.RoleTool, Bytes: len(it.Raw),
				Text: it.Get("output").String(), Key: messageKey(chat.Message{Role: chat.RoleTool, Content: it.Get("output").String(), ToolCallID: it.Get("call_id").String()})})
			continue
		}
		flush()
		m := chat.Message{Role: it.Get("role").String(), Content: itemText(it.Get("content"))}
		if m.Role == chat.RoleAssistant {
			pending, pendingBytes = &m, len(it.Raw)
			continue
		}
		out = append(out, Forwarded{Role: m.Role, Text: messageText(m), Key: messageKey(m), Bytes: len(it.Raw)})
	}
	flush()
	return out
}

// knownItems is a message the replay sent as Responses items: their JSON
// joined by commas, how many, and the message decoded.
type knownItems struct {
	raw string
	n   int
	f   Forwarded
}

// itemText is the text of an item's content: a string, or its parts' texts
// joined by newlines.
func itemText(c gjson.Result) string {
	if !c.IsArray() {
		return c.String()
	}
	var texts []string
	c.ForEach(func(_, p gjson.Result) bool {
		if t := p.Get("text"); t.Exists() {
			texts = append(texts, t.String())
		}
		return true
	})
	return strings.Join(texts, "\n")
}
