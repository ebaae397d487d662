package trajectory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
)

func TestReadClaudeCodeReal(t *testing.T) {
	cases := map[string]int{ // human string messages per session
		"cli-task-2026-0.json": 3, "cli-task-30159a.json": 7, "cli-task-70c88c.json": 3, "cli-task-b3d2dd.json": 4,
	}
	for name, turns := range cases {
		b := chattest.ReadShared(t, "sessions", "swe-together", name)
		tr, skips, err := ReadClaudeCode(b, name, strings.TrimSuffix(name, ".json"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(skips) != 0 {
			t.Errorf("%s: skips %v", name, skips)
		}
		if len(tr.Turns) != turns {
			t.Errorf("%s: %d turns, want %d", name, len(tr.Turns), turns)
		}
		for i, turn := range tr.Turns {
			if err := ValidateMessages(turn.Messages); err != nil {
				t.Errorf("%s: turn %d: %v", name, i, err)
			}
		}
	}
}

func TestReadClaudeCodeConversion(t *testing.T) {
	b := chattest.ReadShared(t, "sessions", "swe-together", "cli-task-b3d2dd.json")
	tr, _, err := ReadClaudeCode(b, "b3d2dd", "b3d2dd")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Workdir != "/Users/alex/workspace/cli/.worktrees/1" {
		t.Errorf("workdir = %q", tr.Workdir)
	}
	if tr.Turns[2].Request != "yeah add it" {
		t.Errorf("turn 2 request = %q", tr.Turns[2].Request)
	}
	var sawRead, sawInterjection bool
	for _, m := range tr.Turns[0].Messages {
		if strings.Contains(m.Content, "Let me read the plan document") {
			t.Error("thinking block kept")
		}
		for _, c := range m.ToolCalls {
			if c.ID == "toolu_01Us12trjMw7DLq6LXB8q3Px" {
				sawRead = true
				var a map[string]any
				_ = json.Unmarshal([]byte(c.Function.Arguments), &a)
				if c.Function.Name != "read" || a["filePath"] != "/Users/alex/workspace/cli/.worktrees/1/docs/plans/2026-03-05-explain-bugs.md" {
					t.Errorf("Read mapped to %s %s", c.Function.Name, c.Function.Arguments)
				}
			}
		}
		if m.Role == chat.RoleUser && strings.HasPrefix(m.Content, "and I'm sceptical about the uuid filtering") {
			sawInterjection = true
		}
	}
	if !sawRead || !sawInterjection {
		t.Errorf("read call found %v, mid-turn remark kept as a user message %v", sawRead, sawInterjection)
	}
}

func FuzzReadClaudeCode(f *testing.F) {
	f.Add([]byte(`{"session_id":"s","messages":[{"role":"user","content":"fix it"},{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"tool_use","id":"u1","name":"Bash","input":{"command":"ls"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"u1","content":[{"type":"text","text":"a"}]},{"type":"text","text":"hm"}]},{"role":"user","content":"yes please"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":"x"},{"role":"user","content":[{"type":"image"}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, _, err := ReadClaudeCode(b, "fuzz", "fuzz")
		if err != nil {
			return
		}
		for _, turn := range tr.Turns {
			if err := ValidateMessages(turn.Messages); err != nil {
				t.Fatalf("invalid history: %v", err)
			}
		}
	})
}

// TestClaudeCodeLogParallelCalls: Claude Code logs each call of one
// response as its own entry, and can log a call's result before the
// response's next call (seen in real logs, marot/spotter's
// test/fixtures/transcripts). The entries of one response (one message
// id) are one assistant message with every call, followed by the results;
// nothing is repaired, and a new response is a message of its own.
func TestClaudeCodeLogParallelCalls(t *testing.T) {
	use := func(msg, id, file string) string {
		return `{"type":"assistant","message":{"id":"` + msg + `","role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"Read","input":{"file_path":"/srv/app/` + file + `"}}]}}`
	}
	result := func(id string) string {
		return `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"ok"}]}}`
	}
	log := strings.Join([]string{
		`{"type":"user","cwd":"/srv/app","message":{"role":"user","content":"why does the export time out?"}}`,
		`{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Reading the three files."}]}}`,
		use("msg_1", "toolu_a", "export.go"), use("msg_1", "toolu_b", "query.go"),
		result("toolu_b"),
		use("msg_1", "toolu_c", "pool.go"),
		`{"type":"progress","data":{}}`,
		result("toolu_a"), result("toolu_c"),
		use("msg_2", "toolu_d", "pool_test.go"), result("toolu_d"),
		`{"type":"assistant","message":{"id":"msg_3","role":"assistant","content":[{"type":"text","text":"The pool is too small."}]}}`,
	}, "\n")
	tr, skips, err := ReadClaudeCodeLog([]byte(log), "parallel.jsonl", "parallel")
	if err != nil || len(skips) > 0 {
		t.Fatal(err, skips)
	}
	var got []string
	for _, m := range tr.Turns[0].Messages {
		s := m.Role + m.ToolCallID
		for _, c := range m.ToolCalls {
			s += " " + c.ID
		}
		got = append(got, s)
	}
	want := "assistant toolu_a toolu_b toolu_c|tooltoolu_b|tooltoolu_a|tooltoolu_c|assistant toolu_d|tooltoolu_d|assistant"
	if strings.Join(got, "|") != want {
		t.Errorf("messages %s\nwant     %s", strings.Join(got, "|"), want)
	}
	if err := ValidateMessages(tr.Turns[0].Messages); err != nil {
		t.Error(err)
	}
}

// TestClaudeCodeLogCompacted: the summary Claude Code logs after a
// compaction (isCompactSummary, its content a string or text blocks) opens
// a Compacted turn; the requests before and after it do not.
func TestClaudeCodeLogCompacted(t *testing.T) {
	for _, summary := range []string{`"This session is being continued from a previous conversation."`,
		`[{"type":"text","text":"This session is being continued from a previous conversation."}]`} {
		log := strings.Join([]string{
			`{"type":"user","message":{"role":"user","content":"add the CSV export"}}`,
			`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Added."}]}}`,
			`{"type":"system","subtype":"compact_boundary","content":"Conversation compacted"}`,
			`{"type":"user","isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{"role":"user","content":` + summary + `}}`,
			`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Continuing."}]}}`,
			`{"type":"user","message":{"role":"user","content":"now sort it by date"}}`,
		}, "\n")
		tr, skips, err := ReadClaudeCodeLog([]byte(log), "c.jsonl", "c")
		if err != nil || len(skips) > 0 {
			t.Fatal(err, skips)
		}
		var got []string
		for _, turn := range tr.Turns {
			got = append(got, fmt.Sprintf("%v", turn.Compacted()))
		}
		if strings.Join(got, " ") != "false true false" {
			t.Errorf("%s: compacted %v", summary, got)
		}
	}
}

// FuzzReadClaudeCodeLog: any bytes read as a Claude Code log neither panic
// nor leave a tool call unanswered, and give fewer messages than bytes.
func FuzzReadClaudeCodeLog(f *testing.F) {
	f.Add([]byte(`{"type":"user","cwd":"/x","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Bash","input":{"command":"ls"}}]}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x"},{"type":"text","text":"more"}]}}`))
	f.Add([]byte("{}\n\n[1]\n{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"image\"}]}}"))
	f.Add([]byte(`{"type":"user","message":{"role":"user","content":"go"}}` + "\n" +
		`{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"a","name":"Read","input":{}}]}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x"},{"type":"text","text":"n"}]}}` + "\n" +
		`{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"b","name":"Read","input":{}}]}}`))
	f.Add([]byte(`{"type":"user","message":{"role":"user","content":"go"}}` + "\n" +
		`{"type":"user","isCompactSummary":true,"message":{"role":"user","content":[{"type":"text","text":"summary"}]}}`))
	f.Add([]byte(`{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"one"}}` + "\n" +
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}` + "\n" +
		`{"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user","content":"two"}}` + "\n" +
		`{"type":"user","uuid":"u3","parentUuid":"a1","message":{"role":"user","content":[{"type":"text","text":"two again"}]}}` + "\n" +
		`{"type":"last-prompt","leafUuid":"u3"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, _, err := ReadClaudeCodeLog(b, "fuzz", "fuzz")
		if err == nil {
			checkReadLog(t, tr, b)
		}
	})
}

// checkReadLog fails t when a log read from b leaves a tool call
// unanswered or gives more messages than b has bytes.
func checkReadLog(t *testing.T, tr *chat.Trajectory, b []byte) {
	t.Helper()
	messages := 0
	for i, turn := range tr.Turns {
		if err := ValidateMessages(turn.Messages); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		messages += 1 + len(turn.Messages)
		at := 0
		for _, r := range turn.Rebuilt {
			if r.At < at || r.At > 1+len(turn.Messages) {
				t.Fatalf("turn %d: rebuilt at %d, after %d, of %d messages", i, r.At, at, len(turn.Messages))
			}
			at = r.At
		}
	}
	if messages > len(b) {
		t.Fatalf("%d messages from %d bytes", messages, len(b))
	}
	// Every call is valid, and the whole history's stretch its From says.
	l := chat.Lay("sys", tr.Turns)
	for _, c := range l.Calls {
		if err := ValidateMessages(c.Messages[1:]); err != nil {
			t.Fatalf("call %d: %v", c.Index, err)
		}
		for k, m := range c.Messages[1:] {
			if h := l.History[c.From+k]; h.Role != m.Role || h.Content != m.Content {
				t.Fatalf("call %d message %d is not the history's %d", c.Index, k+1, c.From+k)
			}
		}
	}
}
