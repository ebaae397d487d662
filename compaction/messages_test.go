package compaction

import (
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
)

func claudeCode(t *testing.T, name string) *transcript.Transcript {
	t.Helper()
	r := capture.LoadIn(t, capture.ClaudeCodeDir(), name)
	tr, err := transcript.Parse(transcript.AnthropicMessages, r.Body, transcript.AnthropicMessages.Hints(r.Header))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestRewriteClaudeCode: both of Claude Code's summarisation calls (the
// instruction after the tool_result blocks of the last user message, or a
// user message of its own) get the task brief and the <summary> contract
// appended to that message, everything else byte-identical.
func TestRewriteClaudeCode(t *testing.T) {
	tasks := []TaskState{
		{ID: "t1", Requirements: []Requirement{{Text: "fix the compiler"}}},
		{ID: "t2", Active: true, Requirements: []Requirement{{Text: "test the validator"}}},
	}
	for _, name := range []string{"compaction_manual_request", "compaction_auto_request"} {
		tr := claudeCode(t, name)
		e, err := Rewrite(tr, tasks)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		last := len(tr.Messages) - 1
		if len(e.Replace) != 1 || e.Replace[last] == nil {
			t.Fatalf("%s: replaced %v", name, e.Replace)
		}
		out, err := tr.Rebuild(e)
		if err != nil || !gjson.ValidBytes(out) {
			t.Fatalf("%s: %v", name, err)
		}
		m := gjson.GetBytes(out, "messages.@reverse.0")
		text := m.Get("content").String()
		if m.Get("content").IsArray() {
			if name == "compaction_manual_request" && m.Get("content.0.type").Str != "tool_result" {
				t.Fatalf("%s: tool_result no longer first", name)
			}
			text = m.Get("content.@reverse.0.text").Str
		}
		if !strings.Contains(text, "## Task t1") || !strings.Contains(text, "<summary></summary>") {
			t.Fatalf("%s: brief missing: %q", name, text)
		}
		if gjson.GetBytes(out, "system").Raw != gjson.GetBytes(tr.Body, "system").Raw {
			t.Fatalf("%s: system changed", name)
		}
	}
}

// TestSplitSummaryInsideSummaryTags: the <analysis> block, which may name
// tasks, is no part of any section.
func TestSplitSummaryInsideSummaryTags(t *testing.T) {
	got := SplitSummary("<analysis>\n## Task a\nthinking</analysis>\n<summary>\n## Task a\nA\n## Task b\nB\n</summary>", []string{"a", "b"})
	if got["a"] != "## Task a\nA" || got["b"] != "## Task b\nB" {
		t.Fatalf("%q", got)
	}
}

// TestSummaryTextClaudeCode: the summary of Claude Code's continuation
// message is the text between "Summary:" and its closing advice.
func TestSummaryTextClaudeCode(t *testing.T) {
	tr := claudeCode(t, "after_autocompaction_request")
	s := SummaryText(tr, 0)
	if !strings.HasPrefix(s, "1. Primary Request and Intent") || !strings.HasSuffix(s, "9. Optional Next Step: none.") {
		t.Fatalf("%q", s)
	}
}

// TestFitMessagesKeepsPairs: condensing a Claude Code turn cuts the long
// tool output inside its tool_result block and the long text inside its
// text block; the tool_use, its result's id, the thinking block and the
// user's request stay.
func TestFitMessagesKeepsPairs(t *testing.T) {
	long := strings.Repeat("line of output\n", 1000)
	body := []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"first task"},{"type":"text","text":` + mustQuote(long) + `}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":` + mustQuote(long) + `},{"type":"tool_use","id":"u1","name":"Bash","input":{"command":"ls"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"u1","content":` + mustQuote(long) + `},{"type":"tool_result","tool_use_id":"u1","content":[{"type":"text","text":` + mustQuote(long) + `}]}]},` +
		`{"role":"assistant","content":"done"},{"role":"user","content":[{"type":"text","text":` + mustQuote(long) + `}]}]}`)
	tr, err := transcript.Parse(transcript.AnthropicMessages, body, transcript.Hints{})
	if err != nil {
		t.Fatal(err)
	}
	e, rep := Fit(tr, transcript.Edit{Keep: keepAll(tr)}, 12000, 0, 1)
	if rep.Condensed != 1 || rep.Dropped != 0 {
		t.Fatalf("report %+v", rep)
	}
	out, err := tr.Rebuild(e)
	if err != nil || !gjson.ValidBytes(out) || len(out) >= len(body)*2/3 {
		t.Fatalf("rebuilt %d of %d bytes (%v)", len(out), len(body), err)
	}
	as, us := gjson.GetBytes(out, "messages.1.content"), gjson.GetBytes(out, "messages.2.content")
	if as.Get("0.signature").Str != "s" || as.Get("2.id").Str != "u1" || !strings.Contains(as.Get("1.text").Str, "[rcm: cut") {
		t.Fatalf("assistant blocks: %s", as.Raw)
	}
	if gjson.GetBytes(out, "messages.0").Raw != string(tr.Messages[0].Raw) {
		t.Fatal("the request was cut")
	}
	if us.Get("0.tool_use_id").Str != "u1" || !strings.Contains(us.Get("0.content").Str, "[rcm: cut") || !strings.Contains(us.Get("1.content.0.text").Str, "[rcm: cut") {
		t.Fatalf("tool results: %.300s", us.Raw)
	}
}
