package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// fragment is the largest piece of text or arguments one SSE event carries;
// small, so that clients' reassembly is exercised.
const fragment = 16

// Wire shapes of the OpenAI chat-completions API, with omitempty exactly
// where OpenAI omits fields (a streamed tool call's type and id only in its
// first delta).
type (
	wireCompletion struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []wireChoice `json:"choices"`
		Usage   *wireUsage   `json:"usage,omitempty"`
	}
	wireChoice struct {
		Index        int          `json:"index"`
		Message      *wireMessage `json:"message,omitempty"`
		Delta        *wireMessage `json:"delta,omitempty"`
		FinishReason *string      `json:"finish_reason"`
	}
	wireMessage struct {
		Role      string         `json:"role,omitempty"`
		Content   *string        `json:"content,omitempty"`
		ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
	}
	wireToolCall struct {
		Index    *int         `json:"index,omitempty"`
		ID       string       `json:"id,omitempty"`
		Type     string       `json:"type,omitempty"`
		Function wireFunction `json:"function"`
	}
	wireFunction struct {
		Name      string  `json:"name,omitempty"`
		Arguments *string `json:"arguments,omitempty"`
	}
	wireUsage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
	wireError struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
)

// completion is one successful answer, ready to be written either way.
type completion struct {
	id      string
	model   string
	created int64
	reply   Reply
	usage   wireUsage
	callID  int  // numbers default tool-call ids
	empty   bool // no output at all (a Responses call with generate false)
}

func (c *completion) finishReason() *string {
	r := "stop"
	if len(c.reply.ToolCalls) > 0 {
		r = "tool_calls"
	}
	return &r
}

func (c *completion) toolCallID(i int) string {
	if id := c.reply.ToolCalls[i].ID; id != "" {
		return id
	}
	return fmt.Sprintf("call_%d_%d", c.callID, i)
}

func (c *completion) arguments(i int) string {
	if a := c.reply.ToolCalls[i].Arguments; a != "" {
		return a
	}
	return "{}"
}

func (c *completion) envelope(object string, choices []wireChoice) wireCompletion {
	return wireCompletion{ID: c.id, Object: object, Created: c.created, Model: c.model, Choices: choices}
}

// json writes the non-streamed chat.completion object.
func (c *completion) json(ctx context.Context, w http.ResponseWriter) {
	if c.reply.Hang {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		<-ctx.Done()
		return
	}
	msg := &wireMessage{Role: "assistant"}
	if c.reply.Text != "" || len(c.reply.ToolCalls) == 0 {
		msg.Content = &c.reply.Text
	}
	for i, tc := range c.reply.ToolCalls {
		args := c.arguments(i)
		msg.ToolCalls = append(msg.ToolCalls, wireToolCall{
			ID: c.toolCallID(i), Type: "function",
			Function: wireFunction{Name: tc.Name, Arguments: &args},
		})
	}
	out := c.envelope("chat.completion", []wireChoice{{Message: msg, FinishReason: c.finishReason()}})
	out.Usage = &c.usage
	writeJSON(w, http.StatusOK, out)
}

// stream writes the answer as server-sent events, one flush per event,
// stopping as soon as the client goes away; it reports whether the stream
// got to its end.
func (c *completion) stream(ctx context.Context, w http.ResponseWriter, includeUsage bool) bool {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	first := true
	send := func(data []byte) bool {
		if !first && !sleep(ctx, c.reply.ChunkDelay) {
			return false
		}
		first = false
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	delta := func(d *wireMessage, finish *string) bool {
		b, _ := json.Marshal(c.envelope("chat.completion.chunk", []wireChoice{{Delta: d, FinishReason: finish}}))
		return send(b)
	}

	if !delta(&wireMessage{Role: "assistant"}, nil) {
		return false
	}
	if c.reply.Hang {
		<-ctx.Done()
		return false
	}
	for _, p := range pieces(c.reply.Text) {
		if !delta(&wireMessage{Content: &p}, nil) {
			return false
		}
	}
	for i, tc := range c.reply.ToolCalls {
		open := wireToolCall{Index: &i, ID: c.toolCallID(i), Type: "function", Function: wireFunction{Name: tc.Name}}
		if !delta(&wireMessage{ToolCalls: []wireToolCall{open}}, nil) {
			return false
		}
		for _, p := range pieces(c.arguments(i)) {
			frag := wireToolCall{Index: &i, Function: wireFunction{Arguments: &p}}
			if !delta(&wireMessage{ToolCalls: []wireToolCall{frag}}, nil) {
				return false
			}
		}
	}
	if !delta(&wireMessage{}, c.finishReason()) {
		return false
	}
	if includeUsage {
		u := c.envelope("chat.completion.chunk", []wireChoice{})
		u.Usage = &c.usage
		b, _ := json.Marshal(u)
		if !send(b) {
			return false
		}
	}
	return send([]byte("[DONE]"))
}

// pieces cuts s into fragments of at most fragment bytes on rune boundaries.
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		n := min(fragment, len(s))
		for n < len(s) && n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 { // a rune longer than fragment cannot happen; keep progress anyway
			_, n = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// usage is the reply's accounting, or an estimate of about four bytes per token.
func usage(r Reply, bodyLen int) wireUsage {
	if r.Usage != nil {
		return wireUsage{r.Usage.Prompt, r.Usage.Completion, r.Usage.Prompt + r.Usage.Completion}
	}
	out := len(r.Text)
	for _, tc := range r.ToolCalls {
		out += len(tc.Name) + len(tc.Arguments)
	}
	p, o := (bodyLen+3)/4, (out+3)/4
	return wireUsage{p, o, p + o}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v) // the wire types always marshal
	writeBody(w, status, b)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeBody(w, status, errorBody(status, msg))
}

// errorBody is an OpenAI error object saying msg.
func errorBody(status int, msg string) []byte {
	var e wireError
	e.Error.Message = "scripted: " + msg
	e.Error.Type = "invalid_request_error"
	if status >= 500 {
		e.Error.Type = "server_error"
	}
	b, _ := json.Marshal(e) // the wire types always marshal
	return b
}

// errorBody is what a failed reply answers: its ErrorBody, or an OpenAI
// error object naming the status.
func (r Reply) errorBody() []byte {
	if r.ErrorBody != "" {
		return []byte(r.ErrorBody)
	}
	return errorBody(r.Status, fmt.Sprintf("scripted error reply (status %d)", r.Status))
}

func writeBody(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
