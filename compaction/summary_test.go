package compaction

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

func TestSplitSummary(t *testing.T) {
	ids := []string{"t1", "t2", "t10"}
	for _, c := range []struct {
		name    string
		summary string
		ids     []string
		want    map[string]string
	}{
		{"none", "## Objective\n- fix it\n", ids, map[string]string{}},
		{"no ids", "## Task t1\nx\n", nil, map[string]string{}},
		{"empty", "", ids, map[string]string{}},
		{
			"two sections with subsections and preamble",
			"Shared: repo at /r\n\n## Task t1\n### Objective\n- a\n### Unfinished\n- b\n\n## Task t2\n### Objective\n- c\n",
			ids,
			map[string]string{
				"t1": "## Task t1\n### Objective\n- a\n### Unfinished\n- b",
				"t2": "## Task t2\n### Objective\n- c",
			},
		},
		{
			"missing and unknown sections",
			"## Task t2\n- c\n## Task t9\n- unknown task\n",
			ids,
			map[string]string{"t2": "## Task t2\n- c"},
		},
		{
			"heading variants",
			"# Task: `t1`\nx\n### **Task t2** (active)\ny\n## task T10 —  parser\nz\n##Task t1\nnot a heading\n",
			ids,
			map[string]string{
				"t1":  "# Task: `t1`\nx",
				"t2":  "### **Task t2** (active)\ny",
				"t10": "## task T10 —  parser\nz\n##Task t1\nnot a heading",
			},
		},
		{
			"longest id wins, boundaries",
			"## Task t10\na\n## Task t1x\nb\n## Tasks t1\nc\n",
			ids,
			map[string]string{"t10": "## Task t10\na"},
		},
		{
			"a higher heading ends the section; a deeper one does not",
			"### Task t1\na\n#### Notes\nb\n## Shared\nc\n### Task t2\nd",
			ids,
			map[string]string{"t1": "### Task t1\na\n#### Notes\nb", "t2": "### Task t2\nd"},
		},
		{
			"repeated section joined",
			"## Task t1\na\n## Task t2\nb\n## Task t1\nc\n",
			ids,
			map[string]string{"t1": "## Task t1\na\n\n## Task t1\nc", "t2": "## Task t2\nb"},
		},
		{
			"headings in code fences do not count",
			"## Task t1\n```md\n## Task t2\n```\n~~~\n# x\n~~~\n## Task t2\nb\n",
			ids,
			map[string]string{"t1": "## Task t1\n```md\n## Task t2\n```\n~~~\n# x\n~~~", "t2": "## Task t2\nb"},
		},
		{
			"CRLF line ends, trailing hashes",
			"## Task t1 ##\r\na\r\n## Task t2\r\nb\r\n",
			ids,
			map[string]string{"t1": "## Task t1 ##\r\na", "t2": "## Task t2\r\nb"},
		},
		{
			"four-space indent is code, seven hashes no heading",
			"    ## Task t1\n####### Task t2\n",
			ids,
			map[string]string{},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := SplitSummary(c.summary, c.ids)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestSplitSummaryGeneral(t *testing.T) {
	_, general, found := split("Shared: /r\n## Task a\nx\n## Later\nshared too\n", []string{"a"})
	if !found || general != "Shared: /r\n## Later\nshared too" {
		t.Errorf("general %q found %v", general, found)
	}
}

func FuzzSplitSummary(f *testing.F) {
	f.Add("## Task a\nx\n## Task b\ny", "a,b")
	f.Add("```\n# Task a\n```\n### **Task `b`**\n", "b,a,")
	f.Add("#\n##  \n# Task\n# Task:\xff", "\xff,a")
	f.Fuzz(func(t *testing.T, summary, idList string) {
		ids := strings.Split(idList, ",")
		got := SplitSummary(summary, ids)
		for id, s := range got {
			if id == "" {
				t.Fatal("empty id")
			}
			// A section opens with its task's heading, taken from the summary.
			line, _, _ := strings.Cut(s, "\n")
			if _, title := headingOf(line); taskOf(title, ids) != id || !strings.Contains(summary, line) {
				t.Fatalf("section of %q opens with %q", id, line)
			}
			// Splitting a section again yields that section alone.
			if again := SplitSummary(s, ids)[id]; again != s {
				t.Fatalf("re-split of %q: %q != %q", id, again, s)
			}
		}
	})
}

// summaryCapture returns the post-compaction capture with its summary
// replaced by text.
func summaryCapture(t *testing.T, text string) []byte {
	t.Helper()
	body := capture.Body(t, "after_autocompaction_request")
	q := mustQuote(text)
	out, err := sjson.SetRawBytes(body, "messages.2.content", []byte(q))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestScopeSummary(t *testing.T) {
	summary := "Shared: the repository is /home/dev/project.\n\n" +
		"## Task t1\n### Objective\n- fix parse_range\n### Unfinished\n- add a test\n\n" +
		"## Task t2\n### Objective\n- rename --verbose\n### Unfinished\n- docs/cli.md\n"
	body := summaryCapture(t, summary)
	tr := chattest.Parse(t, body)
	sections := SplitSummary(summary, []string{"t1", "t2"})
	if len(tr.Turns) != 1 || tr.Turns[0].Kind != 1 {
		t.Fatalf("turns %+v", tr.Turns)
	}
	for _, c := range []struct {
		task, want string
	}{
		{"t1", "Shared: the repository is /home/dev/project.\n\n## Task t1\n### Objective\n- fix parse_range\n### Unfinished\n- add a test"},
		{"t2", "Shared: the repository is /home/dev/project.\n\n## Task t2\n### Objective\n- rename --verbose\n### Unfinished\n- docs/cli.md"},
		{"t3", "Shared: the repository is /home/dev/project.\n\n[rcm: the summary has no section for task t3; other tasks' sections omitted]"},
	} {
		rep, ok := ScopeSummary(tr, 0, c.task, sections)
		if !ok || len(rep) != 1 {
			t.Fatalf("%s: ok %v, %d replaced", c.task, ok, len(rep))
		}
		raw := rep[2]
		if got := gjson.GetBytes(raw, "content").Str; got != c.want {
			t.Errorf("%s: content %q, want %q", c.task, got, c.want)
		}
		keep := keepAll(tr)
		e := tr.Messages[2].Raw
		out, err := tr.Rebuild(editWith(keep, rep))
		if err != nil || !json.Valid(out) {
			t.Fatalf("%s: rebuild %v", c.task, err)
		}
		if !bytes.Equal(out, bytes.Replace(body, e, raw, 1)) {
			t.Errorf("%s: bytes beyond the summary message changed", c.task)
		}
		if gjson.GetBytes(raw, "role").Str != "assistant" {
			t.Errorf("%s: role lost", c.task)
		}
	}
}

func TestScopeSummaryKeepsWhole(t *testing.T) {
	// The real capture: a summary without per-task sections.
	tr := chattest.Parse(t, capture.Body(t, "after_autocompaction_request"))
	if _, ok := ScopeSummary(tr, 0, "t1", map[string]string{"t1": "## Task t1\nx"}); ok {
		t.Error("scoped a summary without task sections")
	}
	if _, ok := ScopeSummary(tr, 0, "t1", nil); ok {
		t.Error("scoped without sections")
	}
	tr = chattest.Parse(t, summaryCapture(t, "## Task t1\nx"))
	for _, turn := range []int{-1, 1, 7} {
		if _, ok := ScopeSummary(tr, turn, "t1", map[string]string{"t1": "x"}); ok {
			t.Errorf("turn %d scoped", turn)
		}
	}
	// A request turn is no summary.
	agent := chattest.Parse(t, capture.Body(t, "continue_request"))
	if _, ok := ScopeSummary(agent, 0, "t1", map[string]string{"t1": "x"}); ok {
		t.Error("request turn scoped")
	}
}

// TestScopeClaudeSummaryOnChat: Claude Code's continuation message, come on
// the chat wire (Claude Code behind a router that speaks chat completions,
// or its log replayed as OpenCode), holds the summary: it is what
// SummaryText reads and ScopeSummary scopes, not the model's answer after
// it, and Claude Code's framing stays.
func TestScopeClaudeSummaryOnChat(t *testing.T) {
	summary := "Shared: one repository.\n\n## Task t1\n- fix parse_range\n\n## Task t2\n- rename --verbose\n"
	cont := "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nSummary:\n" +
		summary + "\n\nIf you need specific details from before compaction, read the full transcript.\nContinue the conversation from where it left off."
	body := chattest.Body(chattest.System("You are a coding agent."), chattest.User(cont), chattest.Assistant("## Task t9\nI will go on with parse_range."), chattest.User("did you push?"))
	tr := chattest.Parse(t, body)
	if len(tr.Turns) != 2 || tr.Turns[0].Kind != transcript.Summary || tr.Turns[1].Kind != transcript.Request {
		t.Fatalf("turns %+v", tr.Turns)
	}
	if got := SummaryText(tr, 0); got != summary {
		t.Fatalf("summary text %q", got)
	}
	rep, ok := ScopeSummary(tr, 0, "t2", SplitSummary(summary, []string{"t1", "t2"}))
	if !ok || len(rep) != 1 || rep[1] == nil {
		t.Fatalf("ok %v, replaced %v", ok, rep)
	}
	got := gjson.GetBytes(rep[1], "content").Str
	if strings.Contains(got, "parse_range") || !strings.Contains(got, "rename --verbose") ||
		!strings.HasPrefix(got, "This session is being continued") || !strings.HasSuffix(got, "where it left off.") {
		t.Fatalf("scoped %q", got)
	}
}
