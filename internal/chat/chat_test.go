package chat_test

import (
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
