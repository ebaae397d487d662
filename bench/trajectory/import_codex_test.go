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
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"user_message","message":"x"}}` + "\n" + `{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c"}}` + "\n" + `{"type":"compacted","payload":{"message":"s","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}]}}` + "\n" + `{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"o"}}`))
	f.Add([]byte(`{"id":"a","timestamp":"t","instructions":null}` + "\n" + `{"record_type":"state"}` + "\n" + `{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context><cwd>/w</cwd></environment_context>"}]}` + "\n" + `{"type":"message","role":"user","content":"x"}` + "\n" + `{"type":"function_call","name":"shell","arguments":"{}","call_id":"c"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, _, err := ReadCodexLog(b, "fuzz", "fuzz")
		if err == nil {
			checkReadLog(t, tr, b)
		}
	})
}

// TestReadCodexLogCompacted: a compacted line rebuilds the history where it
// stands, as Codex does: inside a turn (auto-compaction between two model
// calls) the turn's later calls send the person's messages and the
// summary; a line holding replacement_history sends that history; a line
// with neither sends Codex's placeholder. Requests stay the person's: the
// labels, which count user messages, still match.
func TestReadCodexLogCompacted(t *testing.T) {
	head := `{"type":"session_meta","payload":{"id":"019a","cwd":"/home/eve/shop"}}
{"type":"event_msg","payload":{"type":"user_message","message":"fix the cart total"}}
{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Fixed."}]}}
{"type":"event_msg","payload":{"type":"user_message","message":"now the tax"}}
{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":\"grep -n tax cart.py\"}","call_id":"c1"}}
{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"3: tax = 0"}}
`
	tail := `
{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Tax added."}]}}
{"type":"event_msg","payload":{"type":"user_message","message":"commit"}}
{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Committed."}]}}
`
	for _, c := range []struct {
		name, line string
		want       []string // the rebuilt history
	}{
		{"summary", `{"type":"compacted","payload":{"message":"` + codexSummaryPrefix + `\nThe cart total is fixed; the tax is next."}}`,
			[]string{"user:fix the cart total", "user:now the tax", "user:" + codexSummaryPrefix + "\nThe cart total is fixed; the tax is next."}},
		{"summary without the prefix", `{"type":"compacted","payload":{"message":"The tax is next."}}`,
			[]string{"user:fix the cart total", "user:now the tax", "user:" + codexSummaryPrefix + "\nThe tax is next."}},
		{"replacement history", `{"type":"compacted","payload":{"message":"","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"now the tax"}]},{"type":"compaction","encrypted_content":"gAAA"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Working on the tax."}]}]}}`,
			[]string{"user:now the tax", "assistant:Working on the tax."}},
		{"nothing", `{"type":"compacted","payload":{}}`,
			[]string{"user:fix the cart total", "user:now the tax", "user:(no summary available)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, _, err := ReadCodexLog([]byte(head+c.line+tail), "rollout", "r")
			if err != nil {
				t.Fatal(err)
			}
			var reqs []string
			for _, turn := range tr.Turns {
				reqs = append(reqs, turn.Request)
			}
			if strings.Join(reqs, "|") != "fix the cart total|now the tax|commit" || tr.Turns[0].Compacted() || tr.Turns[2].Compacted() {
				t.Fatalf("requests %q, turns %+v", reqs, tr.Turns)
			}
			rb := tr.Turns[1].Rebuilt
			if len(rb) != 1 || rb[0].At != 3 || len(tr.Turns[1].Messages) != 3 {
				t.Fatalf("turn 2: rebuilt %+v, messages %+v", rb, tr.Turns[1].Messages)
			}
			var got []string
			for _, m := range rb[0].History {
				got = append(got, m.Role+":"+m.Content)
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("history %q\nwant    %q", got, c.want)
			}
		})
	}
}

// TestCodexRebuiltBudget: of the person's messages Codex keeps the newest
// within its budget, cutting the oldest it keeps in the middle.
func TestCodexRebuiltBudget(t *testing.T) {
	big := strings.Repeat("é", codexKeptTokens*codexTokenBytes/2) // exactly the budget, in two-byte runes
	hist, kept := codexRebuilt(codexItem{Message: codexSummaryPrefix + "\nS"}, []string{"oldest", strings.Repeat("x", 40), big[:len(big)-16]})
	if len(hist) != 3 || len(kept) != 2 || hist[2].Content != codexSummaryPrefix+"\nS" || hist[1].Content != big[:len(big)-16] {
		t.Fatalf("kept %d messages, history %d", len(kept), len(hist))
	}
	cut := hist[0].Content
	if !strings.Contains(cut, "tokens truncated") || !strings.HasPrefix(cut, "xxxx") || !strings.HasSuffix(cut, "xxxx") || len(cut) >= 40+len("…10 tokens truncated…") {
		t.Errorf("the oldest kept message: %q", cut)
	}
}

// TestReadCodexLogNoEvents: a rollout whose requests are only user
// messages (a trimmed one, as an eval's fixture keeps it) takes them as
// requests, the harness's context messages left out.
func TestReadCodexLogNoEvents(t *testing.T) {
	log := `{"timestamp":"2026-07-17T18:00:14.000Z","type":"session_meta","payload":{"id":"019f","cwd":"/home/eve/shop"}}
{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /home/eve/shop\n\n<INSTRUCTIONS>be brief</INSTRUCTIONS>"}]}}
{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"I had to restart: go on with step 4 of docs/plan.md"}]}}
{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"p1","input":"*** Begin Patch\n*** Update File: cart.py\n@@\n-a\n+b\n*** End Patch\n"}}
{"type":"event_msg","payload":{"type":"patch_apply_end","call_id":"p1"}}
{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"p1","output":"Success."}}
`
	tr, skips, err := ReadCodexLog([]byte(log), "rollout", "r")
	if err != nil || len(skips) > 0 {
		t.Fatal(err, skips)
	}
	if len(tr.Turns) != 1 || tr.Turns[0].Request != "I had to restart: go on with step 4 of docs/plan.md" || len(tr.Turns[0].Messages) != 2 {
		t.Fatalf("%+v", tr.Turns)
	}
}
