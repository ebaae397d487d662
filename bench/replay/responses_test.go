package replay

import (
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/tidwall/gjson"
)

// TestResponsesItems: an assistant message with text and two tool calls is
// three items (a message, two function_call items) that parseItems reads
// back as that one message, whether the replay knows the bytes or decodes
// them; a tool result is a function_call_output item; the decoded keys and
// texts are the chat message's.
func TestResponsesItems(t *testing.T) {
	msgs := []chat.Message{
		{Role: chat.RoleSystem, Content: "sys"},
		{Role: chat.RoleUser, Content: "fix <a> & b"},
		{Role: chat.RoleAssistant, Content: "two", ToolCalls: []chat.ToolCall{
			{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "bash", Arguments: `{"command":"ls"}`}},
			{ID: "c2", Type: "function", Function: chat.FunctionCall{Name: "read", Arguments: `{"path":"x"}`}}}},
		{Role: chat.RoleTool, ToolCallID: "c1", Content: "out"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c3", Type: "function", Function: chat.FunctionCall{Name: "bash", Arguments: `{}`}}}},
		{Role: chat.RoleAssistant, Content: "done"},
	}
	var enc []string
	known := map[string]knownItems{}
	for _, m := range msgs {
		b := responsesItems(m)
		items := gjson.Parse("[" + string(b) + "]").Array()
		enc = append(enc, string(b))
		known[items[0].Raw] = knownItems{raw: string(b), n: len(items), f: Forwarded{Role: m.Role, Text: messageText(m), Key: messageKey(m), Bytes: len(b)}}
	}
	if n := len(gjson.Parse("[" + enc[2] + "]").Array()); n != 3 {
		t.Fatalf("assistant with two calls: %d items, want 3: %s", n, enc[2])
	}
	if typ := gjson.Get(enc[3], "type").Str; typ != "function_call_output" {
		t.Fatalf("tool result as %s", enc[3])
	}
	input := gjson.Parse("[" + strings.Join(enc, ",") + "]")
	for name, k := range map[string]map[string]knownItems{"known": known, "decoded": nil} {
		got := parseItems(input, k)
		if len(got) != len(msgs) {
			t.Fatalf("%s: %d messages, want %d", name, len(got), len(msgs))
		}
		for i, m := range msgs {
			if got[i].Key != messageKey(m) || got[i].Text != messageText(m) || got[i].Role != m.Role || got[i].Bytes != len(enc[i]) {
				t.Errorf("%s: message %d: %+v, want %q bytes %d", name, i, got[i], messageText(m), len(enc[i]))
			}
		}
	}
	// A known first item whose following items differ is decoded instead.
	cut := gjson.Parse("[" + strings.Join(strings.SplitN(enc[2], ",{", 2)[:1], "") + "]")
	if got := parseItems(cut, known); len(got) != 1 || got[0].Key != messageKey(chat.Message{Role: chat.RoleAssistant, Content: "two"}) {
		t.Errorf("cut message: %+v", got)
	}
}

// FuzzParseForwarded: any forwarded body, chat or Responses, decodes
// without a panic, and a Responses input's bytes are all accounted for
// (each item once, within one message).
func FuzzParseForwarded(f *testing.F) {
	f.Add([]byte(`{"input":[{"role":"user","content":"a"},{"type":"function_call","call_id":"c","name":"n","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}]}`))
	f.Add([]byte(`{"input":[{"role":"assistant","content":[{"type":"output_text","text":"t"}]},{"type":"function_call"},{"type":"reasoning","encrypted_content":"x"}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"y"}]}]}`))
	f.Add([]byte(`{"input":"just text"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fwd := parseForwarded(body)
		in := gjson.GetBytes(body, "input")
		if gjson.GetBytes(body, "messages").Exists() || !in.IsArray() || !gjson.ValidBytes(body) {
			return
		}
		total, n := 0, 0
		in.ForEach(func(_, it gjson.Result) bool {
			total += len(it.Raw)
			n++
			return true
		})
		got := 0
		for _, f := range fwd {
			got += f.Bytes
		}
		// Merged items count the commas between them.
		if got < total || got > total+n || len(fwd) > n {
			t.Fatalf("%d messages of %d bytes from %d items of %d bytes", len(fwd), got, n, total)
		}
	})
}
