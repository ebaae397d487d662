package replay

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
)

// captureHistory is the conversation of the real compaction capture
// (testdata/opencode/compaction_manual_request.body.json) as OpenCode sent
// it on its agent calls.
func captureHistory() []chat.Message {
	return []chat.Message{
		{Role: chat.RoleSystem, Content: "You are OpenCode."},
		{Role: chat.RoleUser, Content: "serve msg 1: run a tool"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_1", Type: "function",
			Function: chat.FunctionCall{Name: "bash", Arguments: `{"command": "echo hello-from-tool && pwd", "description": "Print a greeting"}`}}}},
		{Role: chat.RoleTool, ToolCallID: "call_1", Content: "hello-from-tool\n/home/dev/project\n"},
		{Role: chat.RoleAssistant, Content: "done"},
		{Role: chat.RoleUser, Content: "serve msg 2 NOTOOL"},
		{Role: chat.RoleAssistant, Content: "ok, answered without tools"},
	}
}

// TestCompactionBodyMatchesCapture: the builder reproduces OpenCode's real
// compaction call byte for byte from the same conversation.
func TestCompactionBodyMatchesCapture(t *testing.T) {
	want, err := os.ReadFile("../../testdata/opencode/compaction_manual_request.body.json")
	if err != nil {
		t.Fatal(err)
	}
	got := CompactionBody("m1", captureHistory(), DefaultCompactionTail)
	if string(got) != string(want) {
		t.Errorf("body differs from the capture:\ngot  %s\nwant %s", got, want)
	}
}

func TestCompactionBodyTailAndTruncation(t *testing.T) {
	long := strings.Repeat("é", 2500) // 2 bytes, 1 UTF-16 unit each
	h := []chat.Message{
		{Role: chat.RoleSystem, Content: "sys"},
		{Role: chat.RoleUser, Content: "first request"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "a", Function: chat.FunctionCall{Name: "read", Arguments: `{"p":1}`}}}},
		{Role: chat.RoleTool, ToolCallID: "a", Content: long},
		{Role: chat.RoleUser, Content: "second request"},
		{Role: chat.RoleAssistant, Content: strings.Repeat("x", 400)},
		{Role: chat.RoleUser, Content: "third request"},
		{Role: chat.RoleAssistant, Content: "ok"},
	}
	prompt := func(tail int) string {
		f := parseForwarded(CompactionBody("m", h, tail))
		if len(f) != 2 || f[0].Role != "system" || f[1].Role != "user" {
			t.Fatalf("tail %d: messages %+v", tail, f)
		}
		return f[1].Text
	}
	cases := []struct {
		tail    int
		in, out []string
	}{
		// Everything fits the tail: OpenCode then summarises the whole.
		{DefaultCompactionTail, []string{"first", "second", "third"}, nil},
		{-1, []string{"first", "second", "third"}, nil},
		// The last turn (19 tokens) fits, the one before (119) does not, and
		// neither does its answer alone.
		{40, []string{"first", "second"}, []string{"third"}},
		// The second turn's answer fits with the third turn: the turn is split
		// after its request, which stays in the prompt.
		{130, []string{"first", "[User]: second request"}, []string{"xxxx", "third"}},
		// Both later turns fit whole.
		{200, []string{"first"}, []string{"second", "third"}},
	}
	for _, c := range cases {
		p := prompt(c.tail)
		for _, s := range c.in {
			if !strings.Contains(p, s) {
				t.Errorf("tail %d: %q missing from\n%s", c.tail, s, p)
			}
		}
		for _, s := range c.out {
			if strings.Contains(p, s) {
				t.Errorf("tail %d: %q should be in the kept tail, not the prompt", c.tail, s)
			}
		}
	}
	p := prompt(-1)
	if want := "[Assistant tool call]: read({\"p\":1})\n[Tool result]: " + strings.Repeat("é", 2000) + "\n[truncated]\n\n[User]: second request"; !strings.Contains(p, want) {
		t.Errorf("tool result not cut at 2000 characters:\n%.300s", p)
	}
	if !strings.HasPrefix(p, "Here is the conversation so far:\n\n<conversation>\n[User]: first request\n\n") ||
		!strings.Contains(p, "\n</conversation>\n\nCreate a new anchored summary") {
		t.Errorf("prompt shape:\n%.200s", p)
	}
}

func TestCompactionCoverage(t *testing.T) {
	fwd := []Forwarded{{Text: "sys"}, {Text: "<conversation>\n[User]: fix a in /w/ws1\n[User]: fix b\n</conversation>"}, {Text: "also: more on a"}}
	reqs := map[string][]string{"a": {"fix a in /w/ws1", "more on a"}, "b": {"fix b", "more on b"}, "c": {"fix c"}}
	cases := []struct {
		tasks []string
		want  float64
	}{
		{[]string{"a"}, 1}, // requests found in different messages
		{[]string{"b"}, 0}, // one of two requests missing
		{[]string{"a", "b", "c"}, 1. / 3},
		{[]string{"d"}, 1}, // a task with no requests has nothing to miss
		{nil, math.NaN()},
	}
	for _, c := range cases {
		got := compactionCoverage(fwd, reqs, c.tasks)
		if got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("%v: got %v, want %v", c.tasks, got, c.want)
		}
	}
}

func TestCompactionSections(t *testing.T) {
	sent := "summarize ## Task old (from the conversation)"
	cases := []struct {
		fwd  string
		want bool
	}{
		{sent, false},
		{sent + " write each headed exactly `## Task <id>` (## Task t1, ## Task t2)", true},
		{sent + " ## Task t1 only", false},
		{sent + " ## Task old, ## Task t1", false}, // old was already there
		{"## Task a\n## Task b\n", true},
	}
	for _, c := range cases {
		if got := compactionSections(sent, c.fwd); got != c.want {
			t.Errorf("%q: got %v, want %v", c.fwd, got, c.want)
		}
	}
}
