package scripted

import (
	"context"
	"fmt"
	"net/http"
)

// responsesStream answers as the OpenAI Responses API streams: the reply's
// text as one assistant message item, each tool call as a function_call
// item, every item announced (response.output_item.added) and finished
// (response.output_item.done), then response.completed with all output
// items and the usage, which is what a proxy records of the answer.
func (c *completion) responsesStream(ctx context.Context, w http.ResponseWriter) {
	seq := 0
	send := c.events(ctx, w, func(v map[string]any) {
		v["sequence_number"] = seq
		seq++
	})
	resp := map[string]any{"id": c.id, "object": "response", "created_at": c.created, "model": c.model, "status": "in_progress", "output": []any{}}
	if !send("response.created", map[string]any{"response": resp}) {
		return
	}
	if c.reply.Hang {
		<-ctx.Done()
		return
	}
	var output []any
	if c.reply.Text != "" || len(c.reply.ToolCalls) == 0 {
		output = append(output, map[string]any{"type": "message", "id": fmt.Sprintf("msg_%s", c.id), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": c.reply.Text, "annotations": []any{}}}})
	}
	for k, tc := range c.reply.ToolCalls {
		output = append(output, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s_%d", c.id, k), "status": "completed",
			"call_id": c.toolCallID(k), "name": tc.Name, "arguments": c.arguments(k)})
	}
	for i, it := range output {
		if !send("response.output_item.added", map[string]any{"output_index": i, "item": it}) ||
			!send("response.output_item.done", map[string]any{"output_index": i, "item": it}) {
			return
		}
	}
	resp["status"], resp["output"] = "completed", output
	resp["usage"] = map[string]any{"input_tokens": c.usage.PromptTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": c.usage.CompletionTokens, "total_tokens": c.usage.TotalTokens}
	send("response.completed", map[string]any{"response": resp})
}
