package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// messagesStream answers as Anthropic's Messages API streams: the reply's
// text as one text block, each tool call as a tool_use block whose input
// comes in input_json_delta fragments, the stop reason and the usage.
func (c *completion) messagesStream(ctx context.Context, w http.ResponseWriter) {
	send := c.events(ctx, w, nil)
	if !send("message_start", map[string]any{"message": map[string]any{"id": c.id, "type": "message", "role": "assistant",
		"model": c.model, "content": []any{}, "stop_reason": nil,
		"usage": map[string]any{"input_tokens": c.usage.PromptTokens, "cache_read_input_tokens": 0, "output_tokens": 1}}}) {
		return
	}
	if c.reply.Hang {
		<-ctx.Done()
		return
	}
	i := 0
	if c.reply.Text != "" {
		if !send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}}) {
			return
		}
		for _, p := range pieces(c.reply.Text) {
			if !send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": p}}) {
				return
			}
		}
		if !send("content_block_stop", map[string]any{"index": i}) {
			return
		}
		i++
	}
	for k, tc := range c.reply.ToolCalls {
		if !send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": c.toolCallID(k), "name": tc.Name, "input": map[string]any{}}}) {
			return
		}
		for _, p := range pieces(c.arguments(k)) {
			if !send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}}) {
				return
			}
		}
		if !send("content_block_stop", map[string]any{"index": i}) {
			return
		}
		i++
	}
	stop := "end_turn"
	if len(c.reply.ToolCalls) > 0 {
		stop = "tool_use"
	}
	if !send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": c.usage.CompletionTokens}}) {
		return
	}
	send("message_stop", map[string]any{})
}

// events starts an SSE answer of named events and returns what sends one:
// the event's type set in its data (and whatever each adds, e.g. a sequence
// number), flushed at once, the reply's ChunkDelay between events; false
// once the client is gone.
func (c *completion) events(ctx context.Context, w http.ResponseWriter, each func(v map[string]any)) func(typ string, v map[string]any) bool {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	first := true
	return func(typ string, v map[string]any) bool {
		if !first && !sleep(ctx, c.reply.ChunkDelay) {
			return false
		}
		first = false
		v["type"] = typ
		if each != nil {
			each(v)
		}
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
}
