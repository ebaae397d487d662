package spec

import (
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
)

func TestRewritePath(t *testing.T) {
	cases := []struct{ in, want string }{
		{"cd /testbed && ls", "cd /work/ws2 && ls"},
		{"/testbed/django/http.py", "/work/ws2/django/http.py"},
		{`"workdir":"/testbed"`, `"workdir":"/work/ws2"`},
		{"/opt/miniconda3/envs/testbed/bin/python", "/opt/miniconda3/envs/testbed/bin/python"},
		{"/opt/miniconda3/envs/testbed/lib and /testbed", "/opt/miniconda3/envs/testbed/lib and /work/ws2"},
		{"/testbed2/x /testbed.bak", "/testbed2/x /testbed.bak"},
		{"no path here", "no path here"},
		{"/testbed/testbed", "/work/ws2/testbed"},
	}
	for _, c := range cases {
		if got := rewritePath(c.in, "/testbed", "/work/ws2"); got != c.want {
			t.Errorf("rewritePath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestMessageRewriteCopies(t *testing.T) {
	m := chat.Message{Role: chat.RoleAssistant, Content: "in /testbed", ToolCalls: []chat.ToolCall{chattest.Call("1", "bash", map[string]string{"command": "ls /testbed", "workdir": "/testbed"})}}
	r := rewrite(m, "/testbed", "/w/ws1")
	if r.Content != "in /w/ws1" || r.ToolCalls[0].Function.Arguments != `{"command":"ls /w/ws1","workdir":"/w/ws1"}` {
		t.Errorf("rewrite = %+v", r)
	}
	if m.ToolCalls[0].Function.Arguments != `{"command":"ls /testbed","workdir":"/testbed"}` {
		t.Error("rewrite changed its receiver's tool calls")
	}
}
