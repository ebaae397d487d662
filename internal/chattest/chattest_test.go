package chattest

import (
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/tidwall/gjson"
)

func TestBodies(t *testing.T) {
	ms := []chat.Message{User("fix it"), ToolCall("c1", "bash", map[string]string{"command": "ls"}), ToolResult("c1", "a.go"), Assistant("done")}
	body := Body(append([]chat.Message{System("sys")}, ms...)...)
	if tr := Parse(t, body); len(tr.Turns) != 1 {
		t.Fatalf("%d turns", len(tr.Turns))
	}
	if got := gjson.GetBytes(body, "messages.2.tool_calls.0.function.arguments").String(); got != `{"command":"ls"}` {
		t.Fatalf("arguments %s", got)
	}
	if got := Requests(body); len(got) != 1 || got[0] != "fix it" {
		t.Fatalf("requests %q", got)
	}
	var h History
	h.Add(System("sys"))
	h.Add(ms...)
	if string(h.Body()) != string(body) || len(Messages(h.Prefix(2))) != 2 {
		t.Fatal("History differs from Body")
	}
	oc := OpenCodeBody(t, ms...)
	base := capture.Body(t, "first_agent_request")
	if gjson.GetBytes(oc, "tools").Raw != gjson.GetBytes(base, "tools").Raw ||
		Messages(oc)[0] != gjson.GetBytes(base, "messages.0").Raw || len(Messages(oc)) != 1+len(ms) {
		t.Fatal("OpenCodeBody does not keep the capture around the messages")
	}
	Parse(t, oc)
}
