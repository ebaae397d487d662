package scripted

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// chunk is a streamed chat.completion.chunk as a client decodes it.
type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Role      *string `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    *int    `json:"index"`
				ID       *string `json:"id"`
				Type     *string `json:"type"`
				Function struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

// assembled is a stream put back together the way an SDK does it.
type assembled struct {
	role      string
	text      string
	calls     []ToolCall
	finish    string
	usage     *Usage
	events    int
	usageLast bool // the usage chunk came after the finish chunk, with no choices
	done      bool
}

// readEvents returns the data payloads of an SSE stream.
func readEvents(t *testing.T, r io.Reader) []string {
	t.Helper()
	var events []string
	var data []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != nil {
				events = append(events, strings.Join(data, "\n"))
				data = nil
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case strings.HasPrefix(line, ":"), strings.HasPrefix(line, "event:"):
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	if data != nil {
		t.Fatalf("stream ended inside an event: %q", data)
	}
	return events
}

// assemble checks each chunk's shape and reassembles the answer.
func assemble(t *testing.T, events []string) assembled {
	t.Helper()
	var a assembled
	var id string
	for i, ev := range events {
		if a.done {
			t.Fatalf("event %d after [DONE]: %s", i, ev)
		}
		if ev == "[DONE]" {
			a.done = true
			continue
		}
		a.events++
		var c chunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("event %d is not JSON: %v: %s", i, err, ev)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("event %d: object %q", i, c.Object)
		}
		if id == "" {
			id = c.ID
		} else if c.ID != id {
			t.Errorf("event %d: id %q, earlier %q", i, c.ID, id)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 || a.finish == "" {
				t.Errorf("event %d: usage chunk with choices %d, after finish %q", i, len(c.Choices), a.finish)
			}
			a.usage = &Usage{c.Usage.PromptTokens, c.Usage.CompletionTokens}
			a.usageLast = c.Usage.TotalTokens == c.Usage.PromptTokens+c.Usage.CompletionTokens
			continue
		}
		if len(c.Choices) != 1 {
			t.Fatalf("event %d: %d choices", i, len(c.Choices))
		}
		ch := c.Choices[0]
		if a.finish != "" {
			t.Errorf("event %d: choice after finish_reason %q", i, a.finish)
		}
		if ch.FinishReason != nil {
			a.finish = *ch.FinishReason
		}
		if ch.Delta == nil {
			continue
		}
		d := ch.Delta
		if d.Role != nil {
			if i != 0 {
				t.Errorf("event %d: role delta after the first event", i)
			}
			a.role = *d.Role
		}
		if d.Content != nil {
			a.text += *d.Content
		}
		for _, tc := range d.ToolCalls {
			if tc.Index == nil {
				t.Fatalf("event %d: tool call delta without index", i)
			}
			switch n := *tc.Index; {
			case n == len(a.calls):
				if tc.ID == nil || tc.Type == nil || *tc.Type != "function" || tc.Function.Name == nil {
					t.Fatalf("event %d: tool call %d opens without id, type function and name: %s", i, n, ev)
				}
				a.calls = append(a.calls, ToolCall{ID: *tc.ID, Name: *tc.Function.Name})
				if tc.Function.Arguments != nil {
					a.calls[n].Arguments = *tc.Function.Arguments
				}
			case n == len(a.calls)-1:
				if tc.ID != nil || tc.Type != nil || tc.Function.Name != nil {
					t.Errorf("event %d: argument fragment repeats id, type or name: %s", i, ev)
				}
				if tc.Function.Arguments != nil {
					a.calls[n].Arguments += *tc.Function.Arguments
				}
			default:
				t.Fatalf("event %d: tool call index %d out of order (%d open)", i, n, len(a.calls))
			}
		}
	}
	return a
}
