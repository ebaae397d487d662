package chat_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
)

func TestReplay(t *testing.T) {
	turns := []chat.Turn{
		{Request: "one", Messages: []chat.Message{chattest.ToolCall("c1", "bash", "{}"), chattest.ToolResult("c1", "ok"), chattest.Assistant("done")}},
		{Request: "/add x"},
		{Request: "two", Messages: []chat.Message{chattest.Assistant("sure")}},
	}
	calls := chat.Replay("sys", turns)
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

// TestReplayCompacted: from a compacted turn on, the calls carry the
// system prompt and the turns from it only, and From says where they sit
// in the whole history.
func TestReplayCompacted(t *testing.T) {
	turns := []chat.Turn{
		{Request: "one", Messages: []chat.Message{chattest.Assistant("done")}},
		{Request: "This session is being continued from a previous conversation...", Compacted: true, Messages: []chat.Message{chattest.Assistant("continuing")}},
		{Request: "three", Messages: []chat.Message{chattest.Assistant("ok")}},
	}
	calls := chat.Replay("sys", turns)
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
