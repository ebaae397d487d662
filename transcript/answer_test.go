package transcript

import "testing"

// TestMeter: the model and usage of an answer in each wire format,
// streamed or not, written in pieces of any size.
func TestMeter(t *testing.T) {
	for _, c := range []struct {
		name  string
		sse   bool
		body  string
		model string
		usage Usage
	}{
		{"chat stream", true, "data: {\"model\":\"gpt-4.1\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n" +
			"data: {\"model\":\"gpt-4.1\",\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":100}}}\n\ndata: [DONE]\n\n",
			"gpt-4.1", Usage{Input: 120, Cached: 100, Output: 7}},
		{"chat object", false, `{"model":"gpt-4.1-2025","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":12,"completion_tokens":3}}`,
			"gpt-4.1-2025", Usage{Input: 12, Output: 3}},
		{"messages stream", true, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":90,\"cache_creation_input_tokens\":10,\"output_tokens\":1}}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"model usage\"}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":40}}\n\n",
			"claude-x", Usage{Input: 105, Cached: 90, Written: 10, Output: 40}},
		{"messages object", false, `{"type":"message","model":"claude-x","usage":{"input_tokens":5,"cache_read_input_tokens":0,"output_tokens":2}}`,
			"claude-x", Usage{Input: 5, Output: 2}},
		{"responses stream", true, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"model\":\"gpt-5\",\"usage\":null}}\n\n" +
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"gpt-5\",\"usage\":{\"input_tokens\":50,\"input_tokens_details\":{\"cached_tokens\":20},\"output_tokens\":9}}}\n\n",
			"gpt-5", Usage{Input: 50, Cached: 20, Output: 9}},
		{"cut stream", true, "data: {\"model\":\"m\",\"choices\":[]}\n\ndata: {\"usage\":{\"prompt_tok", "m", Usage{}},
	} {
		for _, piece := range []int{1, 7, len(c.body)} {
			m := NewMeter(c.sse)
			for b := []byte(c.body); len(b) > 0; {
				n := min(piece, len(b))
				m.Write(b[:n])
				b = b[n:]
			}
			m.Close()
			if m.Model != c.model || m.Usage != c.usage {
				t.Errorf("%s in pieces of %d: model %q usage %+v, want %q %+v", c.name, piece, m.Model, m.Usage, c.model, c.usage)
			}
		}
	}
	if got := RequestModel([]byte(`{"messages":[{"role":"user","content":"model"}],"model":"gpt-4.1"}`)); got != "gpt-4.1" {
		t.Errorf("RequestModel %q", got)
	}
}
