package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/tidwall/gjson"
)

// APIs a replay speaks to the proxy.
const (
	APIChat      = "chat"      // POST /v1/chat/completions, OpenCode's shape
	APIMessages  = "messages"  // POST /v1/messages, Anthropic's
	APIResponses = "responses" // POST /v1/responses, OpenAI's Responses API
)

// anthropicMessage encodes a chat message as the Messages API carries it,
// one message for one so that a replay's histories line up in both APIs:
// system and user text as string content (system messages as Claude Code's
// role "system" entries), an assistant's text and tool calls as text and
// tool_use blocks (the arguments as the input object, verbatim), a tool
// result as a user message of one tool_result block.
func anthropicMessage(m chat.Message) ([]byte, error) {
	var b bytes.Buffer
	q := func(s string) { writeString(&b, s) }
	switch {
	case m.Role == chat.RoleTool:
		b.WriteString(`{"role":"user","content":[{"type":"tool_result","tool_use_id":`)
		q(m.ToolCallID)
		b.WriteString(`,"content":`)
		q(m.Content)
		b.WriteString(`}]}`)
	case m.Role == chat.RoleAssistant && len(m.ToolCalls) > 0:
		b.WriteString(`{"role":"assistant","content":[`)
		if m.Content != "" {
			b.WriteString(`{"type":"text","text":`)
			q(m.Content)
			b.WriteString(`},`)
		}
		for i, c := range m.ToolCalls {
			if i > 0 {
				b.WriteByte(',')
			}
			if !gjson.Valid(c.Function.Arguments) || !gjson.Parse(c.Function.Arguments).IsObject() {
				return nil, fmt.Errorf("bench: tool call %s: arguments are not a JSON object", c.ID)
			}
			b.WriteString(`{"type":"tool_use","id":`)
			q(c.ID)
			b.WriteString(`,"name":`)
			q(c.Function.Name)
			b.WriteString(`,"input":`)
			b.WriteString(c.Function.Arguments)
			b.WriteByte('}')
		}
		b.WriteString(`]}`)
	default:
		b.WriteString(`{"role":`)
		q(m.Role)
		b.WriteString(`,"content":`)
		q(m.Content)
		b.WriteByte('}')
	}
	return b.Bytes(), nil
}

// anthropicTools converts chat tools ([{type, function: {name,
// description, parameters}}]) to Anthropic's ([{name, description,
// input_schema}]).
func anthropicTools(chatBody []byte) []byte {
	return convertTools(chatBody, func(b *bytes.Buffer, fn gjson.Result) {
		b.WriteString(`{"name":`)
		b.WriteString(fn.Get("name").Raw)
		if d := fn.Get("description"); d.Exists() {
			b.WriteString(`,"description":`)
			b.WriteString(d.Raw)
		}
		b.WriteString(`,"input_schema":`)
		if p := fn.Get("parameters"); p.IsObject() {
			b.WriteString(p.Raw)
		} else {
			b.WriteString(`{"type":"object"}`)
		}
		b.WriteByte('}')
	})
}

// convertTools writes a JSON array of one tool per chat tool, each written
// by tool from the chat tool's function object.
func convertTools(chatBody []byte, tool func(b *bytes.Buffer, fn gjson.Result)) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	gjson.ParseBytes(chatBody).ForEach(func(_, t gjson.Result) bool {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		tool(&b, t.Get("function"))
		return true
	})
	b.WriteByte(']')
	return b.Bytes()
}

// anthropicBody converts a whole chat body the bench built (the compaction
// call) to the Messages API: its messages one for one, model and
// max_tokens kept, streamed.
func anthropicBody(chatBody []byte) ([]byte, error) {
	return convertBody(chatBody, "max_tokens", "messages", anthropicMessage)
}

// convertBody converts a whole chat body the bench built to another API:
// the model, the token limit as limit, every message encoded into member,
// streamed.
func convertBody(chatBody []byte, limit, member string, encode func(chat.Message) ([]byte, error)) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"model":`)
	b.WriteString(gjson.GetBytes(chatBody, "model").Raw)
	b.WriteString(`,"` + limit + `":`)
	b.WriteString(strconv.FormatInt(gjson.GetBytes(chatBody, "max_tokens").Int(), 10))
	b.WriteString(`,"` + member + `":[`)
	var err error
	gjson.GetBytes(chatBody, "messages").ForEach(func(_, raw gjson.Result) bool {
		var m chat.Message
		if err = json.Unmarshal([]byte(raw.Raw), &m); err != nil {
			return false
		}
		var enc []byte
		if enc, err = encode(m); err != nil {
			return false
		}
		if b.Bytes()[b.Len()-1] != '[' {
			b.WriteByte(',')
		}
		b.Write(enc)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("bench: convert the %s: %w", member, err)
	}
	b.WriteString(`],"stream":true}`)
	return b.Bytes(), nil
}

// forwardedMessage decodes a forwarded message of either API into the chat
// message it stands for (see anthropicMessage): a user message of
// tool_result blocks is the tool result, an assistant's tool_use blocks
// its tool calls (the input verbatim as arguments).
func forwardedMessage(m gjson.Result) chat.Message {
	msg := chat.Message{Role: m.Get("role").String(), ToolCallID: m.Get("tool_call_id").String()}
	c := m.Get("content")
	if !c.IsArray() {
		msg.Content = c.String()
	}
	var texts []string
	c.ForEach(func(_, p gjson.Result) bool {
		switch p.Get("type").Str {
		case "tool_result":
			msg.Role, msg.ToolCallID = chat.RoleTool, p.Get("tool_use_id").String()
			texts = append(texts, p.Get("content").String())
		case "tool_use":
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: p.Get("id").String(), Type: "function",
				Function: chat.FunctionCall{Name: p.Get("name").String(), Arguments: p.Get("input").Raw}})
		default:
			if t := p.Get("text"); t.Exists() {
				texts = append(texts, t.String())
			}
		}
		return true
	})
	if c.IsArray() {
		msg.Content = strings.Join(texts, "\n")
	}
	m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: tc.Get("id").String(), Type: "function",
			Function: chat.FunctionCall{Name: tc.Get("function.name").String(), Arguments: tc.Get("function.arguments").String()}})
		return true
	})
	return msg
}
