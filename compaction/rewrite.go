package compaction

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rcm-dev/rcm/internal/str"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// TaskState is what Rewrite knows of one task of the session: the parts of
// its record (memory.Record) that the summary must keep.
type TaskState struct {
	ID        string
	Active    bool   // the task being worked on last
	Workspace string // the checkout the task works in
	// Requirements are the task's requests, verbatim and oldest first.
	Requirements []Requirement
	Unfinished   []string
	FilesChanged []string
	LastTest     string // the last test command and its outcome
}

// Requirement is one request of a task; an amendment (Amends) is listed
// after what it amends, not merged into it.
type Requirement struct {
	Text   string
	Amends bool
}

// Errors of Rewrite. With either, the returned Edit still keeps every
// message unchanged, so a caller that fails open forwards the call as sent.
var (
	ErrNotCompaction = errors.New("compaction: not a compaction call")
	ErrTasks         = errors.New("compaction: bad task list")
)

// conversationTag marks the harness's summarisation prompt: OpenCode puts
// the conversation to summarise inside it. Codex's prompt (a last user
// message after the history) says checkpointTag instead.
const (
	conversationTag = "<conversation>"
	checkpointTag   = "CONTEXT CHECKPOINT COMPACTION"
)

// promptMarks are the texts that mark the last user message as the
// summarisation prompt, per format: OpenCode's <conversation> (in any),
// Claude Code's instruction (appended to the last user message, or sent as
// one), Codex's context checkpoint.
var promptMarks = map[transcript.Format][]string{
	transcript.OpenAIChat:        {conversationTag},
	transcript.AnthropicMessages: {conversationTag, transcript.SummarizeInstruction},
	transcript.OpenAIResponses:   {conversationTag, checkpointTag},
}

// summaryContract keeps Claude Code's own contract: it reads the summary
// from inside <summary></summary> and asks again when that is missing.
const summaryContract = "\n\nWrite the per-task sections inside the <summary></summary> block your instructions ask for; the <analysis> block stays as it is."

// Rewrite returns an Edit that turns the harness's compaction call t into a
// task-aware one: the prompt (the last user message, holding OpenCode's
// <conversation>, Claude Code's instruction or Codex's context checkpoint
// prompt)
// keeps its text and gets, appended, one <task> block per task with its
// requirements verbatim and its unfinished items from the record, and the
// instruction to answer with one "## Task <id>" section per task that keeps
// every task's open state. Every other message, and every other field of
// the prompt message, stays byte-identical.
//
// With fewer than two tasks there is nothing to keep apart: the Edit keeps
// every message and replaces none. Task IDs must be non-empty and distinct.
func Rewrite(t *transcript.Transcript, tasks []TaskState) (transcript.Edit, error) {
	keep := transcript.Edit{Keep: keepAll(t)}
	if t.Kind != transcript.Compaction {
		return keep, fmt.Errorf("%w: kind %s", ErrNotCompaction, t.Kind)
	}
	if len(tasks) < 2 {
		return keep, nil
	}
	seen := make(map[string]bool, len(tasks))
	for _, ts := range tasks {
		if ts.ID == "" || seen[ts.ID] {
			return keep, fmt.Errorf("%w: empty or repeated id %q", ErrTasks, ts.ID)
		}
		seen[ts.ID] = true
	}
	i := prompt(t)
	if i < 0 {
		return keep, fmt.Errorf("%w: the last user message lacks %q", ErrNotCompaction, strings.Join(promptMarks[t.Format], `" or "`))
	}
	brief := taskBrief(tasks)
	if strings.Contains(t.Messages[i].Text(), transcript.SummarizeInstruction) {
		brief += summaryContract
	}
	raw, err := appendText(t.Messages[i].Raw, brief)
	if err != nil {
		return keep, err
	}
	keep.Replace = map[int][]byte{i: raw}
	return keep, nil
}

// prompt returns the index of the summarisation prompt, or -1.
func prompt(t *transcript.Transcript) int {
	for i := len(t.Messages) - 1; i >= 0; i-- {
		m := &t.Messages[i]
		if m.Role == "user" {
			for _, mark := range promptMarks[t.Format] {
				if strings.Contains(m.Text(), mark) {
					return i
				}
			}
			return -1
		}
	}
	return -1
}

// appendText adds text after a message's content: to the string itself, or
// as a new text part when the content is an array of parts, of the type the
// first part has when that is a Responses "input_text" (chat's "text"
// otherwise).
func appendText(raw []byte, text string) ([]byte, error) {
	c := gjson.GetBytes(raw, "content")
	switch {
	case c.Type == gjson.String:
		return withContent(raw, c.Str+text)
	case c.IsArray():
		typ := "text"
		if c.Get("0.type").Str == "input_text" {
			typ = "input_text"
		}
		part := append(append([]byte(`{"type":"`+typ+`","text":`), str.Quote(text)...), '}')
		out, err := sjson.SetRawBytes(raw, "content.-1", part)
		if err != nil {
			return nil, fmt.Errorf("compaction: append prompt part: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: prompt content is neither text nor parts", ErrNotCompaction)
}

// taskBrief is the text appended to the summarisation prompt. Requirements
// and unfinished items go in tags, not bullets, so that multi-line ones
// stay verbatim.
func taskBrief(tasks []TaskState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n\n<tasks>\nThis conversation interleaves work on %d separate tasks. "+
		"Each task's requirements (the user's requests, verbatim, oldest first) and its open items, as recorded so far:\n", len(tasks))
	var ids, active []string
	for _, ts := range tasks {
		ids = append(ids, "## Task "+ts.ID)
		if ts.Active {
			active = append(active, ts.ID)
		}
		fmt.Fprintf(&b, "\n<task id=%q", ts.ID)
		if ts.Active {
			b.WriteString(` active="true"`)
		}
		b.WriteString(">\n")
		if ts.Workspace != "" {
			fmt.Fprintf(&b, "Workspace: %s\n", ts.Workspace)
		}
		for _, q := range ts.Requirements {
			if q.Amends {
				fmt.Fprintf(&b, "<requirement amends=\"true\">%s</requirement>\n", q.Text)
			} else {
				fmt.Fprintf(&b, "<requirement>%s</requirement>\n", q.Text)
			}
		}
		for _, u := range ts.Unfinished {
			fmt.Fprintf(&b, "<unfinished>%s</unfinished>\n", u)
		}
		if len(ts.FilesChanged) > 0 {
			fmt.Fprintf(&b, "Files changed: %s\n", strings.Join(ts.FilesChanged, ", "))
		}
		if ts.LastTest != "" {
			fmt.Fprintf(&b, "Last test: %s\n", ts.LastTest)
		}
		b.WriteString("</task>\n")
	}
	b.WriteString("</tasks>\n\n")
	fmt.Fprintf(&b, "Output per task (this replaces the single summary structure above): the summary must keep the tasks apart. "+
		"Write one section per task listed in <tasks>, in that order, each headed exactly `## Task <id>` (%s), "+
		"and say nothing about a task outside its own section. Facts shared by every task, if any, go in a few bullets before the first task section. "+
		"Inside each task section use these subsections:\n", strings.Join(ids, ", "))
	b.WriteString(`### Objective
- [what the user wants done in this task]
### Requirements
- [every requirement of this task, verbatim as listed in <tasks>, amendments included]
### State
- [completed, active and blocked work of this task]
### Unfinished
- [every open item of this task: those listed in <tasks> unless the conversation shows them done, and any new ones]
### Next Move
1. [the next concrete action for this task]
### Relevant Files
- [file or directory path: why it matters for this task]
`)
	b.WriteString("\nPreserve every task's open state, not only the latest one's: a task the conversation left earlier is still unfinished unless the conversation shows it done.")
	if len(active) > 0 {
		fmt.Fprintf(&b, " Last worked on: task %s.", strings.Join(active, ", task "))
	}
	return b.String()
}

// keepAll lists every message index of t.
func keepAll(t *transcript.Transcript) []int {
	k := make([]int, len(t.Messages))
	for i := range k {
		k[i] = i
	}
	return k
}
