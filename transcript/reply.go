package transcript

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"
)

// maxReplyCalls bounds the tool calls reassembled from one answer: a
// garbled stream must not make an index of 1e9 allocate.
const maxReplyCalls = 128

// ParseReply returns the assistant message of an upstream chat-completions
// answer: a server-sent event stream of chat.completion.chunk objects
// (sse), whose content and tool calls it reassembles from the deltas of
// choice 0 (tool calls by their index), or one chat.completion object
// (choices[0].message). The body may be cut anywhere (the proxy keeps a
// bounded copy) or garbled: ParseReply uses what parses and reports false
// only when nothing does. A body that is plainly of the other kind than sse
// says is read as what it is.
func ParseReply(body []byte, sse bool) (Message, bool) {
	return OpenAIChat.ParseReply(body, sse)
}

// chatReply is ParseReply's reading of a chat-completions answer.
func chatReply(body []byte, sse bool, m *Message) {
	sse = sniffSSE(body, sse)
	if sse {
		parseStream(body, m)
	} else {
		parseCompletion(body, m)
	}
}

// parseCompletion reads choices[0].message of a chat.completion object.
func parseCompletion(body []byte, m *Message) {
	msg := gjson.GetBytes(body, "choices.0.message")
	if !msg.IsObject() {
		return
	}
	m.text = contentText(msg.Get("content"))
	msg.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
		if len(m.ToolCalls) >= maxReplyCalls {
			return false
		}
		fn := c.Get("function")
		m.ToolCalls = append(m.ToolCalls, ToolCall{
			ID: c.Get("id").String(), Name: fn.Get("name").String(), Arguments: fn.Get("arguments").String(),
		})
		return true
	})
}

// parseStream reassembles a chat.completion.chunk stream; an event that is
// not valid JSON, such as the last one of a cut stream, is skipped.
func parseStream(body []byte, m *Message) {
	var (
		text  strings.Builder
		calls []ToolCall
		args  []strings.Builder
	)
	events(body, func(d []byte) {
		if bytes.Equal(d, []byte("[DONE]")) || !gjson.ValidBytes(d) {
			return
		}
		choice := choiceZero(gjson.ParseBytes(d).Get("choices"))
		if !choice.Exists() {
			return
		}
		delta := choice.Get("delta")
		if !delta.Exists() {
			delta = choice.Get("message") // some servers send whole messages
		}
		if c := delta.Get("content"); c.Exists() {
			text.WriteString(contentText(c))
		}
		delta.Get("tool_calls").ForEach(func(pos, c gjson.Result) bool {
			i := len(calls) - 1
			if ix := c.Get("index"); ix.Type == gjson.Number {
				i = int(ix.Int())
			} else if c.Get("id").String() != "" || i < 0 {
				i = len(calls) // no index: a new call when it has an id
			}
			if i < 0 || i >= maxReplyCalls {
				return true
			}
			for len(calls) <= i {
				calls = append(calls, ToolCall{})
				args = append(args, strings.Builder{})
			}
			if id := c.Get("id").String(); id != "" {
				calls[i].ID = id
			}
			fn := c.Get("function")
			if name := fn.Get("name").String(); name != "" && calls[i].Name == "" {
				calls[i].Name = name
			}
			args[i].WriteString(fn.Get("arguments").String())
			return true
		})
	})
	m.text = text.String()
	for i := range calls {
		calls[i].Arguments = args[i].String()
		if calls[i].Name != "" || calls[i].Arguments != "" {
			m.ToolCalls = append(m.ToolCalls, calls[i])
		}
	}
}

// events calls fn with the data of each server-sent event of body. Events
// are separated by blank lines; the data lines of one event are joined by
// newlines (the SSE rule). fn must not keep data.
func events(body []byte, fn func(data []byte)) {
	var data []byte
	event := func() {
		if len(data) > 0 {
			fn(data)
			data = data[:0]
		}
	}
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) == 0:
			event()
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
	event()
}

// sniffSSE says whether body is an event stream, whatever the response's
// content type claimed, when its first bytes tell.
func sniffSSE(body []byte, sse bool) bool {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	switch {
	case bytes.HasPrefix(trimmed, []byte("{")):
		return false
	case bytes.HasPrefix(trimmed, []byte("data:")), bytes.HasPrefix(trimmed, []byte("event:")),
		bytes.HasPrefix(trimmed, []byte(":")):
		return true
	}
	return sse
}

// Final reports whether a server-sent event of an answer in format f is
// the one that ends the answer: data [DONE] in chat completions,
// message_stop in Messages, response.completed (or .incomplete, .failed,
// .done) in the Responses API. name is the event's event field (nil when
// it has none) and data the opening of its data: only its type is read,
// which these APIs put first, so the rest (a whole response, in Responses)
// need not be held.
func (f Format) Final(name, data []byte) bool {
	typ := string(name)
	if typ == "" {
		if f == OpenAIChat {
			return bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]"))
		}
		typ = gjson.GetBytes(data, "type").Str
	}
	switch f {
	case AnthropicMessages:
		return typ == "message_stop"
	case OpenAIResponses:
		return responsesDone(typ)
	}
	return false
}

// choiceZero returns the choice with index 0 (the first one when none says).
func choiceZero(choices gjson.Result) gjson.Result {
	var first, zero gjson.Result
	choices.ForEach(func(_, c gjson.Result) bool {
		if !first.Exists() {
			first = c
		}
		if c.Get("index").Int() == 0 && c.Get("index").Exists() {
			zero = c
			return false
		}
		return true
	})
	if zero.Exists() {
		return zero
	}
	return first
}
