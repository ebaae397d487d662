package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// toolUse is a tool call a scripted Messages answer makes.
type toolUse struct {
	ID, Name string
	Input    map[string]any
}

// writeMessagesStream answers as the Messages API streams: text (when not
// empty) as one text block in two deltas, then each tool call as a
// tool_use block whose input comes in input_json_delta pieces, and the
// stop reason and usage Claude Code reads.
func writeMessagesStream(w http.ResponseWriter, id, text string, calls ...toolUse) {
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	ev("message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": "claude-opus-5-5",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 1200, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 800, "output_tokens": 1}}})
	i := 0
	if text != "" {
		ev("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
		half := len(text) / 2
		ev("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": text[:half]}})
		ev("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": text[half:]}})
		ev("content_block_stop", map[string]any{"index": i})
		i++
	}
	for _, c := range calls {
		ev("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		in, _ := json.Marshal(c.Input)
		half := len(in) / 2
		ev("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in[:half])}})
		ev("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in[half:])}})
		ev("content_block_stop", map[string]any{"index": i})
		i++
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 12}})
	ev("message_stop", map[string]any{})
}
