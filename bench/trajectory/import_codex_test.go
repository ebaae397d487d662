package trajectory

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// codexRollout is a rollout in the shape Codex CLI writes: the session's
// meta, the harness's instruction and environment messages, a user message
// (its event and its response item), a shell call, an apply_patch over two
// files, their outputs, reasoning and the answer; then a second request.
const codexRollout = `{"timestamp":"2025-10-29T00:59:38.317Z","type":"session_meta","payload":{"id":"019a2d7a","cwd":"/home/eve/shop","cli_version":"0.46.0"}}
{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/home/eve/shop</cwd>\n</environment_context>"}]}}
{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the cart total"}]}}
{"type":"event_msg","payload":{"type":"user_message","message":"fix the cart total","kind":"plain"}}
{"type":"turn_context","payload":{"cwd":"/home/eve/shop","model":"gpt-5-codex"}}
{"type":"response_item","payload":{"type":"reasoning","summary":[],"encrypted_content":"gAAA"}}
{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Looking at the cart."}]}}
{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"grep -n total cart.py\"],\"workdir\":\"/home/eve/shop\"}","call_id":"call_1"}}
{"type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"12: total = 0\\n\",\"metadata\":{\"exit_code\":0}}"}}
{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"call_2","input":"*** Begin Patch\n*** Update File: cart.py\n@@\n-total = 0\n+total = sum(items)\n*** Add File: test_cart.py\n+def test_total(): pass\n*** End Patch\n"}}
{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"call_2","output":"Success. Updated the following files:\nM cart.py\nA test_cart.py\n"}}
{"type":"event_msg","payload":{"type":"agent_message","message":"Fixed."}}
{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Fixed."}]}}
not json
{"type":"event_msg","payload":{"type":"user_message","message":"thanks, commit it"}}
{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"git\",\"commit\",\"-am\",\"fix\"]}","call_id":"call_3"}}
`

func TestReadCodexLog(t *testing.T) {
	tr, skips, err := ReadCodexLog([]byte(codexRollout), "rollout", "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(skips) != 1 || tr.Workdir != "/home/eve/shop" || len(tr.Turns) != 2 || tr.Turns[0].Request != "fix the cart total" || tr.Turns[1].Request != "thanks, commit it" {
		t.Fatalf("skips %v, workdir %q, turns %+v", skips, tr.Workdir, tr.Turns)
	}
	var got []string
	for _, m := range tr.Turns[0].Messages {
		s := m.Role + ":" + m.Content
		for _, c := range m.ToolCalls {
			s += " " + c.Function.Name + gjson.Get(c.Function.Arguments, "command").String() + gjson.Get(c.Function.Arguments, "filePath").String()
		}
		got = append(got, s)
	}
	want := "assistant:Looking at the cart. bashgrep -n total cart.py|tool:12: total = 0\n|assistant: edit/home/eve/shop/cart.py write/home/eve/shop/test_cart.py|tool:Success. Updated the following files:\nM cart.py\nA test_cart.py\n|tool:Success. Updated the following files:\nM cart.py\nA test_cart.py\n|assistant:Fixed."
	if s := strings.Join(got, "|"); s != want {
		t.Errorf("got  %q\nwant %q", s, want)
	}
	edit := tr.Turns[0].Messages[2].ToolCalls[0].Function.Arguments
	if gjson.Get(edit, "oldString").String() != "total = 0\n" || gjson.Get(edit, "newString").String() != "total = sum(items)\n" {
		t.Errorf("edit %s", edit)
	}
	for i, turn := range tr.Turns {
		if err := ValidateMessages(turn.Messages); err != nil {
			t.Errorf("turn %d: %v", i, err)
		}
	}
	if c := tr.Turns[1].Messages[0].ToolCalls[0].Function.Arguments; gjson.Get(c, "command").String() != "git commit -am fix" {
		t.Errorf("argv command %s", c)
	}
}

// FuzzReadCodexLog: any bytes read as a rollout neither panic nor leave a
// tool call unanswered, and give fewer messages than bytes.
func FuzzReadCodexLog(f *testing.F) {
	f.Add([]byte(codexRollout))
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"user_message","message":"x"}}` + "\n" + `{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":"*** Update File: a\n-\n+\n x"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, _, err := ReadCodexLog(b, "fuzz", "fuzz")
		if err == nil {
			checkReadLog(t, tr, b)
		}
	})
}
