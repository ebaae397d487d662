package trajectory

import (
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
)

func TestReadOpenHandsReal(t *testing.T) {
	b := chattest.ReadShared(t, "trajectories", "openhands", "django__django-11099.json")
	tr, skips, err := ReadOpenHands(b, "11099", "django__django-11099")
	if err != nil {
		t.Fatal(err)
	}
	if len(skips) != 0 {
		t.Errorf("skips = %v", skips)
	}
	if tr.Workdir != "/workspace/django__django__3.0" || len(tr.Turns) != 1 {
		t.Fatalf("workdir %q, %d turns", tr.Workdir, len(tr.Turns))
	}
	turn := tr.Turns[0]
	if !strings.HasPrefix(turn.Request, "UsernameValidator allows trailing newline") {
		t.Errorf("request = %.60q", turn.Request)
	}
	first := turn.Messages[0]
	if first.Role != chat.RoleAssistant || first.ToolCalls[0].ID != "toolu_01" || first.ToolCalls[0].Function.Name != "execute_bash" {
		t.Errorf("first = %+v", first)
	}
	last := turn.Messages[len(turn.Messages)-1]
	if last.Role != chat.RoleAssistant || len(last.ToolCalls) != 0 || !strings.HasPrefix(last.Content, "Perfect!") {
		t.Errorf("final message = %+v, want the response without its finish call", last)
	}
	if err := ValidateMessages(turn.Messages); err != nil {
		t.Error(err)
	}
}

// OpenHands ids restart per trajectory: tasks built from two of them share
// ids, which the spec keeps as they are.
func TestOpenHandsDuplicateIDs(t *testing.T) {
	ids := map[string][]string{}
	for _, id := range []string{"django__django-11099", "django__django-11133"} {
		tr, _, err := ReadOpenHands(chattest.ReadShared(t, "trajectories", "openhands", id+".json"), id, id)
		if err != nil {
			t.Fatal(err)
		}
		ids[id] = append(ids[id], tr.Turns[0].Messages[0].ToolCalls[0].ID)
	}
	if ids["django__django-11099"][0] != ids["django__django-11133"][0] {
		t.Errorf("first ids %v: want the same recorded id in both", ids)
	}
}

func TestReadOpenHandsAll(t *testing.T) {
	chattest.EachShared(t, "trajectories/openhands", "*.json", 30, func(f string, b []byte) {
		// Runs cut off at the iteration limit end on a call without a
		// result: it gets "(no result recorded)", reported.
		tr, skips, err := ReadOpenHands(b, f, "x")
		if err != nil || len(skips) > 1 || len(skips) == 1 && skips[0].Reason != "1 unpaired tool calls or results fixed" {
			t.Errorf("%s: %v %v", f, err, skips)
			return
		}
		if err := ValidateMessages(tr.Turns[0].Messages); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if !strings.HasPrefix(tr.Workdir, "/workspace/") {
			t.Errorf("%s: workdir %q", f, tr.Workdir)
		}
	})
}

func TestReadOpenHandsMalformed(t *testing.T) {
	in := `{"fncall_messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"<issue_description>bug</issue_description>"}]},
	{"role":"assistant","content":"a","tool_calls":[{"id":"t1","type":"function","function":{"name":"x","arguments":"{bad"}}]},
	{"role":"tool","tool_call_id":"t1","content":"orphan"},
	{"role":"alien","content":"?"},
	{"role":"assistant","content":"b","tool_calls":[{"id":"t2","type":"function","function":{"name":"x","arguments":"{}"}}]}]}`
	tr, skips, err := ReadOpenHands([]byte(in), "m", "m")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Turns[0].Request != "bug" {
		t.Errorf("request = %q", tr.Turns[0].Request)
	}
	if len(skips) != 3 { // bad arguments, unknown role, fixes
		t.Errorf("skips = %v", skips)
	}
	ms := tr.Turns[0].Messages
	if len(ms) != 2 || ms[0].Content != "b" || ms[1].Content != "(no result recorded)" {
		t.Errorf("messages = %+v", ms)
	}
}

func FuzzReadOpenHands(f *testing.F) {
	f.Add([]byte(`{"fncall_messages":[{"role":"user","content":"<uploaded_files>\n/workspace/r\n</uploaded_files><issue_description>x</issue_description>"},{"role":"assistant","content":"","tool_calls":[{"id":"t","type":"function","function":{"name":"execute_bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t","content":"o"}],"fncall_response":{"choices":[{"message":{"role":"assistant","content":"done"}}]}}`))
	f.Add([]byte(`{"fncall_messages":[{"role":"tool"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, _, err := ReadOpenHands(b, "fuzz", "fuzz")
		if err != nil {
			return
		}
		if err := ValidateMessages(tr.Turns[0].Messages); err != nil {
			t.Fatalf("invalid history: %v", err)
		}
	})
}
