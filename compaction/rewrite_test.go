package compaction

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/internal/str"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
)

func sampleTasks() []TaskState {
	return []TaskState{
		{
			ID:        "t1",
			Workspace: "/work/ws1",
			Requirements: []Requirement{
				{Text: "Fix the off-by-one in `parse_range` (src/range.py) so that \"1-3\" yields 3 items."},
				{Text: "Also keep <end> inclusive\nand add a test for it.", Amends: true},
			},
			Unfinished:   []string{"add test_parse_range_inclusive"},
			FilesChanged: []string{"src/range.py"},
		},
		{
			ID:           "t2",
			Requirements: []Requirement{{Text: "Rename the CLI flag --verbose to --debug & update the docs (ünïcode ok)."}},
			Unfinished:   []string{"docs/cli.md still says --verbose", "run the CLI tests"},
			LastTest:     "pytest tests/cli failed: 2 of 9",
		},
		{ID: "t3", Active: true, Requirements: []Requirement{{Text: "serve msg 2 NOTOOL"}}},
	}
}

func TestRewriteCaptures(t *testing.T) {
	for _, name := range []string{"compaction_manual_request", "compaction_with_prior_summary"} {
		t.Run(name, func(t *testing.T) {
			body := capture.Body(t, name)
			tr := chattest.Parse(t, body)
			tasks := sampleTasks()
			e, err := Rewrite(tr, tasks)
			if err != nil {
				t.Fatal(err)
			}
			if len(e.Replace) != 1 || len(e.Keep) != len(tr.Messages) || len(e.Insert) != 0 {
				t.Fatalf("edit: keep %v, %d replaced, %d inserted", e.Keep, len(e.Replace), len(e.Insert))
			}
			p := prompt(tr)
			newRaw, ok := e.Replace[p]
			if !ok || tr.Messages[p].Role != "user" {
				t.Fatalf("replaced %v, want the user prompt %d", e.Replace, p)
			}
			out, err := tr.Rebuild(e)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(out) {
				t.Fatal("rewritten body is not valid JSON")
			}
			// Everything but the prompt message is byte-identical.
			old := tr.Messages[p].Raw
			if want := bytes.Replace(body, old, newRaw, 1); !bytes.Equal(out, want) {
				t.Fatal("bytes outside the prompt message changed")
			}
			// Within it, only content changed, and the original text leads it.
			var before, after map[string]json.RawMessage
			if err := json.Unmarshal(old, &before); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(newRaw, &after); err != nil {
				t.Fatal(err)
			}
			for k, v := range before {
				if k != "content" && !bytes.Equal(after[k], v) {
					t.Errorf("field %s changed", k)
				}
			}
			if len(after) != len(before) {
				t.Errorf("fields %d -> %d", len(before), len(after))
			}
			re := chattest.Parse(t, out)
			if re.Kind != transcript.Compaction {
				t.Errorf("kind %s after rewrite", re.Kind)
			}
			text := gjson.GetBytes(newRaw, "content").Str
			orig := tr.Messages[p].Text()
			if !strings.HasPrefix(text, orig) {
				t.Fatal("original prompt text not kept intact at the start")
			}
			added := text[len(orig):]
			for _, ts := range tasks {
				for _, q := range ts.Requirements {
					if !strings.Contains(added, q.Text) {
						t.Errorf("task %s: requirement %q missing", ts.ID, q.Text)
					}
				}
				for _, u := range ts.Unfinished {
					if !strings.Contains(added, u) {
						t.Errorf("task %s: unfinished %q missing", ts.ID, u)
					}
				}
				if !strings.Contains(added, "## Task "+ts.ID) {
					t.Errorf("no section instruction for task %s", ts.ID)
				}
			}
			if strings.Count(added, "Preserve every task's open state") != 1 {
				t.Error("the preserve-every-task instruction must appear once")
			}
			// The prompt's tags stay unescaped, as the harness wrote them.
			if bytes.Contains(newRaw, []byte(`\u003c`)) {
				t.Error("HTML-escaped output")
			}
			golden(t, name+".rewrite.golden", added)
		})
	}
}

func TestRewriteNothingToSplit(t *testing.T) {
	body := capture.Body(t, "compaction_manual_request")
	tr := chattest.Parse(t, body)
	for _, tasks := range [][]TaskState{nil, sampleTasks()[:1]} {
		e, err := Rewrite(tr, tasks)
		if err != nil {
			t.Fatal(err)
		}
		out, err := tr.Rebuild(e)
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Replace) != 0 || !bytes.Equal(out, body) {
			t.Errorf("%d tasks: body changed", len(tasks))
		}
	}
}

func TestRewriteErrors(t *testing.T) {
	agent := chattest.Parse(t, capture.Body(t, "continue_request"))
	comp := chattest.Parse(t, capture.Body(t, "compaction_manual_request"))
	dup := sampleTasks()
	dup[1].ID = dup[0].ID
	empty := sampleTasks()
	empty[2].ID = ""
	for _, c := range []struct {
		name  string
		tr    *transcript.Transcript
		tasks []TaskState
		want  error
	}{
		{"agent call", agent, sampleTasks(), ErrNotCompaction},
		{"repeated id", comp, dup, ErrTasks},
		{"empty id", comp, empty, ErrTasks},
	} {
		e, err := Rewrite(c.tr, c.tasks)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
		if out, _ := c.tr.Rebuild(e); !bytes.Equal(out, c.tr.Body) {
			t.Errorf("%s: the edit returned with the error changes the body", c.name)
		}
	}
}

func TestRewritePromptParts(t *testing.T) {
	sys := "You are a context summarization agent. Summarise."
	body := []byte(`{"model":"m1","messages":[{"role":"system","content":` + mustQuote(sys) +
		`},{"role":"user","content":[{"type":"text","text":"<conversation>\n[User]: hi\n</conversation>\n<template>\n## Objective\n</template>"}]}],"stream":true}`)
	tr := chattest.Parse(t, body)
	e, err := Rewrite(tr, sampleTasks())
	if err != nil {
		t.Fatal(err)
	}
	out, err := tr.Rebuild(e)
	if err != nil {
		t.Fatal(err)
	}
	parts := gjson.GetBytes(out, "messages.1.content")
	if n := len(parts.Array()); n != 2 {
		t.Fatalf("%d parts, want the original and one appended: %s", n, parts.Raw)
	}
	if parts.Get("0.text").Str != tr.Messages[1].Text() || !strings.Contains(parts.Get("1.text").Str, "## Task t2") {
		t.Errorf("parts %s", parts.Raw)
	}
	// A prompt without the conversation tag is not the harness's.
	body = bytes.Replace(body, []byte("<conversation>"), []byte("<talk>"), 1)
	if _, err := Rewrite(chattest.Parse(t, body), sampleTasks()); !errors.Is(err, ErrNotCompaction) {
		t.Errorf("no <conversation>: err %v", err)
	}
}

func mustQuote(s string) string { return string(str.Quote(s)) }

// Codex's inline compaction (the context checkpoint prompt, a Responses
// message with input_text parts) gets the task brief as one more
// input_text part; every other item and field stays byte-identical.
func TestRewriteCodexCheckpoint(t *testing.T) {
	for _, name := range []string{"compaction_inline_request", "compaction_manual_tui_request"} {
		r := capture.Codex(t, name)
		tr, err := transcript.Parse(transcript.OpenAIResponses, r.Body, transcript.OpenAIResponses.Hints(r.Header))
		if err != nil {
			t.Fatal(err)
		}
		e, err := Rewrite(tr, sampleTasks())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		last := len(tr.Messages) - 1
		if len(e.Replace) != 1 || e.Replace[last] == nil {
			t.Fatalf("%s: replaced %d, want the last item", name, len(e.Replace))
		}
		out, err := tr.Rebuild(e)
		if err != nil {
			t.Fatal(err)
		}
		before := tr.Messages[last].Raw
		items := gjson.GetBytes(out, "input").Array()
		parts := items[len(items)-1].Get("content")
		if n := len(parts.Array()); n != 2 || parts.Get("1.type").Str != "input_text" ||
			!strings.Contains(parts.Get("1.text").Str, "## Task t1") || parts.Get("0").Raw != gjson.Get(string(before), "content.0").Raw {
			t.Errorf("%s: prompt parts %s", name, parts.Raw)
		}
		start := bytes.Index(r.Body, before)
		if !bytes.Equal(out[:start], r.Body[:start]) || !bytes.HasSuffix(out, r.Body[start+len(before):]) {
			t.Errorf("%s: bytes outside the prompt changed", name)
		}
	}
}
