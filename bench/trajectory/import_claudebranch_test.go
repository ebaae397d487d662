package trajectory

import (
	"os"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
)

// TestClaudeCodeLogRewound: a real Claude Code 2.1.332 log (testdata/
// claude-code-rewind.jsonl, made here against a scripted endpoint): a
// request with two parallel Bash calls, a second request, then
// `claude -p --resume ID --resume-session-at UUID` with a third, which
// rewinds past the second. Claude Code sent the third with the first turn
// only (both tool results, the first hanging off its own tool_use); so
// does the reader, and it names the request it left out.
func TestClaudeCodeLogRewound(t *testing.T) {
	b, err := os.ReadFile("testdata/claude-code-rewind.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tr, skips, err := ReadClaudeCodeLog(b, "rewind.jsonl", "rewind")
	if err != nil {
		t.Fatal(err)
	}
	if got := requests(tr); got != "Run two things. RUN2: echo one ;; echo two|Resumed at turn one, a new second prompt" {
		t.Errorf("requests %s", got)
	}
	if len(skips) != 1 || !strings.Contains(skips[0].Reason, "Abandoned second prompt") {
		t.Errorf("skips %v, want the abandoned request named", skips)
	}
	results := 0
	for _, m := range tr.Turns[0].Messages {
		if m.Role == "tool" {
			results++
		}
	}
	if results != 2 || tr.Workdir != "/tmp/cc/proj" {
		t.Errorf("%d tool results, workdir %s", results, tr.Workdir)
	}
}

// TestClaudeCodeLogBranches: which branches a log's parentUuid links leave
// out, and where the reader reads the file as it stands.
func TestClaudeCodeLogBranches(t *testing.T) {
	user := func(id, parent, text string) string {
		return `{"type":"user","uuid":"` + id + `","parentUuid":` + parent + `,"message":{"role":"user","content":"` + text + `"}}`
	}
	reply := func(id, parent string) string {
		return `{"type":"assistant","uuid":"` + id + `","parentUuid":"` + parent + `","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}`
	}
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"linear", []string{user("u1", "null", "one"), reply("a1", "u1"), user("u2", `"a1"`, "two"), reply("a2", "u2")}, "one|two"},
		{"rewound to the second request", []string{user("u1", "null", "one"), reply("a1", "u1"), user("u2", `"a1"`, "two"), reply("a2", "u2"),
			user("u3", `"a2"`, "three"), reply("a3", "u3"), user("u4", `"a1"`, "two again"), reply("a4", "u4")}, "one|two again"},
		{"rewound to the first request", []string{user("u1", "null", "one"), reply("a1", "u1"), user("u2", "null", "one again"), reply("a2", "u2")}, "one again"},
		{"the last-prompt line names the end", []string{user("u1", "null", "one"), reply("a1", "u1"), user("u2", `"a1"`, "two"), reply("a2", "u2"),
			user("u3", `"a1"`, "two again"), reply("a3", "u3"), `{"type":"last-prompt","leafUuid":"a2"}`}, "one|two"},
		{"a parent the file lacks", []string{user("u1", "null", "one"), reply("a1", "u1"), user("u2", `"a1"`, "two"), reply("a2", "u2"),
			user("u3", `"gone"`, "three"), reply("a3", "u3")}, "one|two|three"},
		{"a compaction's logical parent", []string{user("u1", "null", "one"), reply("a1", "u1"),
			`{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"a1"}`,
			`{"type":"user","isCompactSummary":true,"uuid":"s1","parentUuid":"b1","message":{"role":"user","content":"summary"}}`,
			reply("a2", "s1"), user("u2", `"a2"`, "two"), reply("a3", "u2")}, "one|summary|two"},
		{"a compaction that lost its link", []string{user("u1", "null", "one"), reply("a1", "u1"),
			`{"type":"user","isCompactSummary":true,"uuid":"s1","parentUuid":null,"message":{"role":"user","content":"summary"}}`,
			reply("a2", "s1")}, "one|summary"},
		{"no uuids", []string{`{"type":"user","message":{"role":"user","content":"one"}}`, `{"type":"user","message":{"role":"user","content":"two"}}`}, "one|two"},
		{"a cycle", []string{user("u1", `"a1"`, "one"), reply("a1", "u1"), user("u2", `"x"`, "two"), reply("x", "u2")}, "one|two"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, _, err := ReadClaudeCodeLog([]byte(strings.Join(c.lines, "\n")), "b.jsonl", "b")
			if err != nil {
				t.Fatal(err)
			}
			if got := requests(tr); got != c.want {
				t.Errorf("requests %s, want %s", got, c.want)
			}
		})
	}
}

// requests joins a trajectory's requests with "|".
func requests(tr *chat.Trajectory) string {
	var rs []string
	for _, t := range tr.Turns {
		rs = append(rs, t.Request)
	}
	return strings.Join(rs, "|")
}
