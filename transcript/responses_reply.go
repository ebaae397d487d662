package transcript

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"
)

// Responses answers come as a response object ({"object":"response",
// "output":[items]}) or as a stream of events ({"type":"response.*"}) over
// SSE or WebSocket frames. The output items are what the next request
// sends back as input; response.completed carries them all, and
// response.output_item.done each one as it finishes (what is left of a cut
// stream).

// responsesReply reads the output of a Responses answer into m.
func responsesReply(body []byte, sse bool, m *Message) {
	if !sniffSSE(body, sse) {
		responsesOutput(gjson.GetBytes(body, "output").Array(), m)
		return
	}
	var evs [][]byte
	events(body, func(d []byte) {
		if gjson.ValidBytes(d) {
			evs = append(evs, bytes.Clone(d))
		}
	})
	responsesStream(evs, m)
}

// responsesOutput folds output items into m: message text (output_text
// parts), function and custom tool calls.
func responsesOutput(items []gjson.Result, m *Message) {
	var text []string
	for _, it := range items {
		switch it.Get("type").String() {
		case "message":
			if s := contentText(it.Get("content")); s != "" {
				text = append(text, s)
			}
		case "function_call", "custom_tool_call":
			if len(m.ToolCalls) >= maxReplyCalls {
				continue
			}
			args := it.Get("arguments")
			if !args.Exists() {
				args = it.Get("input")
			}
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: it.Get("call_id").String(), Name: it.Get("name").String(), Arguments: args.String()})
		}
	}
	for i, s := range text {
		if i > 0 {
			m.text += "\n"
		}
		m.text += s
	}
}

// responsesStream reads a Responses event stream: the final response's
// output when it arrived, else the items done so far.
func responsesStream(events [][]byte, m *Message) {
	var done []gjson.Result
	for _, d := range events {
		ev := gjson.ParseBytes(d)
		switch ev.Get("type").String() {
		case "response.completed", "response.incomplete", "response.done":
			responsesOutput(ev.Get("response.output").Array(), m)
			return
		case "response.output_item.done":
			done = append(done, ev.Get("item"))
		}
	}
	responsesOutput(done, m)
}

// responsesDone reports whether a Responses event of type typ ends its
// response.
func responsesDone(typ string) bool {
	switch typ {
	case "response.completed", "response.incomplete", "response.done", "response.failed":
		return true
	}
	return false
}

// Usage is the token accounting of an answer: input tokens, those of
// them served from the provider's cache and written to it, and output
// tokens.
type Usage struct {
	Input, Cached, Output int64
	Written               int64
}

// ResponsesEvent is what a Responses stream event tells about the
// conversation: the response it belongs to, whether it ends it (completed,
// incomplete, failed), its output items (raw, as the next request sends
// them back) and usage.
type ResponsesEvent struct {
	Type   string
	ID     string // response id
	Done   bool
	Output [][]byte
	Usage  Usage
}

// ReadResponsesEvent reads one event (an SSE data payload or a WebSocket
// text frame); ok is false when it is not a Responses event.
func ReadResponsesEvent(data []byte) (ev ResponsesEvent, ok bool) {
	if !gjson.ValidBytes(data) {
		return ev, false
	}
	r := gjson.ParseBytes(data)
	ev.Type = r.Get("type").String()
	ev.Done = responsesDone(ev.Type)
	if ev.Type == "error" {
		return ev, true
	}
	resp := r.Get("response")
	if !resp.Exists() {
		return ev, strings.HasPrefix(ev.Type, "response.")
	}
	ev.ID = resp.Get("id").String()
	if ev.Done {
		resp.Get("output").ForEach(func(_, it gjson.Result) bool {
			ev.Output = append(ev.Output, []byte(it.Raw))
			return true
		})
		u := resp.Get("usage")
		ev.Usage = Usage{Input: u.Get("input_tokens").Int(), Cached: u.Get("input_tokens_details.cached_tokens").Int(), Output: u.Get("output_tokens").Int()}
	}
	return ev, true
}
