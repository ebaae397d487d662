package scripted

import (
	"context"
	"fmt"
	"maps"
)

// responsesStream answers as the OpenAI Responses API streams: the reply's
// text as one assistant message item, each tool call as a function_call
// item (a custom_tool_call item when Custom), every item announced
// (response.output_item.added, empty), filled in by its deltas and
// finished (response.output_item.done), then response.completed with all
// output items and the usage, which is what a proxy records of the answer.
// The AI SDK (OpenCode) needs every step; Codex reads the done items. A
// call that asked for no output (generate false) gets none. It reports
// whether the stream got to its end.
func (c *completion) responsesStream(ctx context.Context, send sender) bool {
	seq := 0
	emit := func(typ string, v map[string]any) bool {
		v["sequence_number"] = seq
		seq++
		return send(typ, v)
	}
	resp := map[string]any{"id": c.id, "object": "response", "created_at": c.created, "model": c.model, "status": "in_progress", "output": []any{}}
	if !emit("response.created", map[string]any{"response": resp}) {
		return false
	}
	if c.reply.Hang {
		<-ctx.Done()
		return false
	}
	output := []any{}
	if !c.empty && (c.reply.Text != "" || len(c.reply.ToolCalls) == 0) {
		part := map[string]any{"type": "output_text", "text": c.reply.Text, "annotations": []any{}}
		item := map[string]any{"type": "message", "id": "msg_" + c.id, "role": "assistant", "status": "completed", "content": []any{part}}
		added := map[string]any{"type": "message", "id": "msg_" + c.id, "role": "assistant", "status": "in_progress", "content": []any{}}
		if !streamItem(emit, len(output), item, added, func(at map[string]any) bool {
			return emit("response.content_part.added", with(at, "content_index", 0, "part", map[string]any{"type": "output_text", "text": "", "annotations": []any{}})) &&
				deltas(emit, "response.output_text.delta", with(at, "content_index", 0), c.reply.Text) &&
				emit("response.output_text.done", with(at, "content_index", 0, "text", c.reply.Text)) &&
				emit("response.content_part.done", with(at, "content_index", 0, "part", part))
		}) {
			return false
		}
		output = append(output, item)
	}
	for k, tc := range c.reply.ToolCalls {
		typ, key, prefix, event := "function_call", "arguments", "fc", "response.function_call_arguments"
		if tc.Custom {
			typ, key, prefix, event = "custom_tool_call", "input", "ctc", "response.custom_tool_call_input"
		}
		args, id := c.arguments(k), fmt.Sprintf("%s_%s_%d", prefix, c.id, k)
		item := map[string]any{"type": typ, "id": id, "status": "completed", "call_id": c.toolCallID(k), "name": tc.Name, key: args}
		added := map[string]any{"type": typ, "id": id, "status": "in_progress", "call_id": c.toolCallID(k), "name": tc.Name, key: ""}
		if !streamItem(emit, len(output), item, added, func(at map[string]any) bool {
			return deltas(emit, event+".delta", at, args) && emit(event+".done", with(at, key, args))
		}) {
			return false
		}
		output = append(output, item)
	}
	resp["status"], resp["output"] = "completed", output
	resp["usage"] = map[string]any{"input_tokens": c.usage.PromptTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": c.usage.CompletionTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": c.usage.TotalTokens}
	return emit("response.completed", map[string]any{"response": resp})
}

// streamItem streams one output item at index i: added (as added), the events
// of fill (given the item_id and output_index every one of them names),
// done.
func streamItem(emit sender, i int, item, added map[string]any, fill func(at map[string]any) bool) bool {
	return emit("response.output_item.added", map[string]any{"output_index": i, "item": added}) &&
		fill(map[string]any{"item_id": item["id"], "output_index": i}) &&
		emit("response.output_item.done", map[string]any{"output_index": i, "item": item})
}

// deltas sends text in fragments as events typ, each with the members of at.
func deltas(emit sender, typ string, at map[string]any, text string) bool {
	for _, p := range pieces(text) {
		if !emit(typ, with(at, "delta", p)) {
			return false
		}
	}
	return true
}

// with returns a copy of m with the given key, value pairs added.
func with(m map[string]any, kv ...any) map[string]any {
	out := maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}
