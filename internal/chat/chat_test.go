package chat_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
)

func TestLay(t *testing.T) {
	turns := []chat.Turn{
		{Request: "one", Messages: []chat.Message{chattest.ToolCall("c1", "bash", "{}"), chattest.ToolResult("c1", "ok"), chattest.Assistant("done")}},
		{Request: "/add x"},
		{Request: "two", Messages: []chat.Message{chattest.Assistant("sure")}},
	}
	calls := chat.Lay("sys", turns).Calls
	if len(calls) != 4 {
		t.Fatalf("%d calls", len(calls))
	}
	var got []string
	for _, c := range calls {
		got = append(got, c.Messages[len(c.Messages)-1].Role+":"+c.Response.Content)
	}
	if s := strings.Join(got, " "); s != "user: tool:done user: user:sure" || calls[3].Step != 2 || len(calls[3].Messages) != 7 {
		t.Fatalf("calls %s, step %d", s, calls[3].Step)
	}
	if calls[2].Response.Role != "" || calls[2].Messages[len(calls[2].Messages)-1].Content != "/add x" {
		t.Fatalf("the unanswered turn's call: %+v", calls[2])
	}
}

// TestLayCompacted: from a compacted turn on, the calls carry the
// system prompt and the turns from it only, and From says where they sit
// in the whole history.
func TestLayCompacted(t *testing.T) {
	turns := []chat.Turn{
		{Request: "one", Messages: []chat.Message{chattest.Assistant("done")}},
		{Request: "This session is being continued from a previous conversation...", Rebuilt: []chat.Rebuild{{}}, Messages: []chat.Message{chattest.Assistant("continuing")}},
		{Request: "three", Messages: []chat.Message{chattest.Assistant("ok")}},
	}
	calls := chat.Lay("sys", turns).Calls
	var got []string
	for _, c := range calls {
		var cs []string
		for _, m := range c.Messages {
			cs = append(cs, m.Content)
		}
		got = append(got, fmt.Sprintf("%d:%s", c.From, strings.Join(cs, ",")))
	}
	want := "1:sys,one|3:sys,This session is being continued from a previous conversation...|3:sys,This session is being continued from a previous conversation...,continuing,three"
	if strings.Join(got, "|") != want {
		t.Errorf("calls %s\nwant  %s", strings.Join(got, "|"), want)
	}
	// The earlier calls' histories are not overwritten by the restart.
	if calls[0].Messages[1].Content != "one" {
		t.Errorf("call 0 changed: %+v", calls[0].Messages)
	}
}

// TestLayRebuilt: a rebuild within a turn (Codex compacting between two of
// its model calls) and at a turn's end: the calls after each send the
// system prompt, the rebuilt history and what followed it; every call is
// the system prompt and History[From:] up to its end; each turn's
// Request indexes its request.
func TestLayRebuilt(t *testing.T) {
	summary := chattest.User("Another language model started to solve this problem... summary")
	turns := []chat.Turn{
		{Request: "one", Messages: []chat.Message{chattest.Assistant("a1")}},
		{Request: "two", Messages: []chat.Message{chattest.ToolCall("c1", "bash", "{}"), chattest.ToolResult("c1", "ok"), chattest.Assistant("a2")},
			Rebuilt: []chat.Rebuild{{At: 2, History: []chat.Message{chattest.User("one"), chattest.User("two"), summary}}}},
		{Request: "three", Messages: []chat.Message{chattest.Assistant("a3")},
			Rebuilt: []chat.Rebuild{{At: 2, History: []chat.Message{chattest.User("three"), summary}}}},
		{Request: "four", Messages: []chat.Message{chattest.Assistant("a4")}},
		{Request: "/status"},
	}
	l := chat.Lay("sys", turns)
	var got []string
	for _, c := range l.Calls {
		var cs []string
		for _, m := range c.Messages {
			cs = append(cs, strings.Fields(m.Content + " " + m.Role)[0])
		}
		got = append(got, fmt.Sprintf("%d:%s", c.From, strings.Join(cs, ",")))
		end := c.From + len(c.Messages) - 1
		for k, m := range c.Messages[1:] {
			if h := l.History[c.From+k]; h.Role != m.Role || h.Content != m.Content {
				t.Errorf("call %d message %d: %+v, History[%d] %+v", c.Index, k+1, m, c.From+k, h)
			}
		}
		if end > len(l.History) {
			t.Errorf("call %d ends at %d past the history (%d)", c.Index, end, len(l.History))
		}
	}
	want := "1:sys,one|1:sys,one,a1,two|5:sys,one,two,Another,ok|5:sys,one,two,Another,ok,a2,three|12:sys,three,Another,four|12:sys,three,Another,four,a4,/status"
	if strings.Join(got, "|") != want {
		t.Errorf("calls %s\nwant  %s", strings.Join(got, "|"), want)
	}
	// The rebuilt histories' copies of requests are their turns'.
	if got := fmt.Sprint(l.Turn[5:8], l.Turn[12:14]); got != "[0 1 -1] [2 -1]" {
		t.Errorf("the rebuilt histories' turns %s", got)
	}
	for i, at := range l.Request {
		if l.History[at].Content != turns[i].Request || l.Turn[at] != i {
			t.Errorf("turn %d: Request %d holds %+v (turn %d)", i, at, l.History[at], l.Turn[at])
		}
	}
}
