package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// sender sends one event of type typ whose data is v (typ set in it); it
// reports false once the client is gone.
type sender func(typ string, v map[string]any) bool

// messagesStream answers as Anthropic's Messages API streams: the reply's
// text as one text block, each tool call as a tool_use block whose input
// comes in input_json_delta fragments, the stop reason and the usage. It
// reports whether the stream got to its end.
func (c *completion) messagesStream(ctx context.Context, send sender) bool {
	if !send("message_start", map[string]any{"message": map[string]any{"id": c.id, "type": "message", "role": "assistant",
		"model": c.model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": c.usage.PromptTokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}}}) {
		return false
	}
	if c.reply.Hang {
		<-ctx.Done()
		return false
	}
	i := 0
	if c.reply.Text != "" {
		if !send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}}) {
			return false
		}
		for _, p := range pieces(c.reply.Text) {
			if !send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": p}}) {
				return false
			}
		}
		if !send("content_block_stop", map[string]any{"index": i}) {
			return false
		}
		i++
	}
	for k, tc := range c.reply.ToolCalls {
		if !send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": c.toolCallID(k), "name": tc.Name, "input": map[string]any{}}}) {
			return false
		}
		for _, p := range pieces(c.arguments(k)) {
			if !send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}}) {
				return false
			}
		}
		if !send("content_block_stop", map[string]any{"index": i}) {
			return false
		}
		i++
	}
	stop := "end_turn"
	if len(c.reply.ToolCalls) > 0 {
		stop = "tool_use"
	}
	if !send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": c.usage.CompletionTokens}}) {
		return false
	}
	return send("message_stop", map[string]any{})
}

// events starts an SSE answer of named events and returns what sends one,
// flushed at once.
func (c *completion) events(ctx context.Context, w http.ResponseWriter) sender {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	return c.paced(ctx, func(typ string, data []byte) bool {
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data); err != nil {
			return false
		}
		return rc.Flush() == nil
	})
}

// paced returns a sender that writes each event's JSON with write, the
// reply's ChunkDelay between events.
func (c *completion) paced(ctx context.Context, write func(typ string, data []byte) bool) sender {
	first := true
	return func(typ string, v map[string]any) bool {
		if !first && !sleep(ctx, c.reply.ChunkDelay) {
			return false
		}
		first = false
		v["type"] = typ
		b, _ := json.Marshal(v) // maps of JSON values always marshal
		return write(typ, b)
	}
}
