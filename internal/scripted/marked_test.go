package scripted

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// ask sends a capture to the server at its path and returns the answer
// read as the proxy reads it, and the raw answer.
func ask(t *testing.T, url string, c capture.Request) (transcript.Message, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+c.Path, bytes.NewReader(c.Body))
	req.Header = c.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s %s", c.Name, resp.Status, raw)
	}
	f, _ := transcript.FormatOf(strings.SplitN(c.Path, "?", 2)[0])
	m, ok := f.ParseReply(raw, true)
	if !ok {
		t.Fatalf("%s: answer not read: %s", c.Name, raw)
	}
	return m, string(raw)
}

// TestMarkedOnCaptures: what Claude Code, Codex and OpenCode really sent,
// answered by the Marked script as the real-client tests need: the
// requested command through each client's own shell tool (Codex's exec as
// a custom call of JavaScript), a subagent where Claude Code offers one, the
// tool result repeated, a summary in the shape the prompt asks for, a
// title; 50000 prompt tokens while the request says BIG, 1200 else.
func TestMarkedOnCaptures(t *testing.T) {
	srv := httptest.NewServer(New(Marked()))
	defer srv.Close()
	claude := func(name string) capture.Request { return capture.LoadIn(t, capture.ClaudeCodeDir(), name) }
	codex := func(name string) capture.Request { return capture.Codex(t, name) }
	cases := []struct {
		req        capture.Request
		text, tool string // the answer's text, the tool it calls
		args       string // the call's arguments or input
	}{
		{claude("first_agent_request"), "", "Bash", `{"command":"echo hello-from-claude > hello.txt","description":"Run the requested command"}`},
		{claude("tool_result_request"), "Done: (Bash completed with no output)", "", ""},
		{claude("subagent_parent_request"), "", "Agent", `{"description":"Run it in a subagent","prompt":"RUN: ls","run_in_background":false,"subagent_type":"general-purpose"}`},
		{claude("subagent_request_with_agent_id"), "", "Bash", `{"command":"ls","description":"Run the requested command"}`},
		{claude("continue_request"), "OK.", "", ""},
		{claude("compaction_manual_request"), "<analysis>The conversation so far.</analysis>\n<summary>\nShared: one project.\n\nAll requests so far were done.\n</summary>", "", ""},
		{codex("first_agent_request"), "", "exec", "const r = await tools.exec_command({cmd: \"echo hello-from-codex > hi.txt\"});\ntext(r);\n"},
		{codex("classic_tools_first_request"), "", "exec_command", `{"cmd":"echo classic-tools > m.txt"}`},
		{codex("tool_result_request"), "Done: Script completed\nWall time 0.1 seconds\nOutput:", "", ""},
		{codex("compaction_inline_request"), "Shared: one project.\n\nAll requests so far were done.\n", "", ""},
		{codex("title_request"), "Scripted session", "", ""},
		{capture.Load(t, "title_request"), "Scripted session", "", ""},
	}
	for _, c := range cases {
		m, raw := ask(t, srv.URL, c.req)
		text := m.Text()
		if c.tool == "" {
			// A tool result is repeated up to 200 bytes: compare what the
			// case names.
			text = text[:min(len(text), len(c.text))]
		}
		if text != c.text {
			t.Errorf("%s: text %q, want %q", c.req.Name, text, c.text)
		}
		switch {
		case c.tool == "" && len(m.ToolCalls) > 0:
			t.Errorf("%s: calls %+v, want none", c.req.Name, m.ToolCalls)
		case c.tool != "" && (len(m.ToolCalls) != 1 || m.ToolCalls[0].Name != c.tool || m.ToolCalls[0].Arguments != c.args):
			t.Errorf("%s: calls %+v, want %s with %s", c.req.Name, m.ToolCalls, c.tool, c.args)
		}
		if !strings.Contains(raw, `"input_tokens":1200`) && !strings.Contains(raw, `"prompt_tokens":1200`) {
			t.Errorf("%s: usage not 1200 prompt tokens: %.300s", c.req.Name, raw)
		}
	}

	// The brief rcm appends to a compaction prompt gets a section per
	// task; a request saying BIG reports 50000 prompt tokens, on every
	// call of its turn.
	comp := codex("compaction_inline_request")
	at := fmt.Sprintf("input.%d.content.0.text", gjson.GetBytes(comp.Body, "input.#").Int()-1)
	brief := "\n\n<tasks>\n<task id=\"alpha\" active=\"true\">\n<requirement>a</requirement>\n</task>\n<task id=\"beta\">\n</task>\n</tasks>"
	comp.Body, _ = sjson.SetBytes(comp.Body, at, gjson.GetBytes(comp.Body, at).Str+brief)
	if m, _ := ask(t, srv.URL, comp); m.Text() != "Shared: one project.\n\n## Task alpha\nSummary of task alpha.\n\n## Task beta\nSummary of task beta.\n" {
		t.Errorf("summary with the brief %q", m.Text())
	}
	for _, name := range []string{"first_agent_request", "tool_result_request"} {
		big := codex(name)
		big.Body = bytes.Replace(big.Body, []byte("Create hi.txt."), []byte("Create hi.txt, BIG."), 1)
		if _, raw := ask(t, srv.URL, big); !strings.Contains(raw, `"input_tokens":50000`) {
			t.Errorf("%s saying BIG: %.300s", name, raw)
		}
	}
}

// TestMarkedMarkWithoutText: a mark with nothing after it asks for
// nothing: the call gets the plain answer.
func TestMarkedMarkWithoutText(t *testing.T) {
	srv := httptest.NewServer(New(Marked()))
	defer srv.Close()
	for _, user := range []string{"RUN:", "AGENT:"} {
		b := `{"tools":[{"name":"Bash"},{"name":"Agent"}],"messages":[{"role":"user","content":"` + user + `"}],"stream":true}`
		m, _ := ask(t, srv.URL, capture.Request{Name: user, Path: "/v1/messages", Header: http.Header{}, Body: []byte(b)})
		if m.Text() != "OK." || len(m.ToolCalls) != 0 {
			t.Errorf("%q answered %q with %d calls", user, m.Text(), len(m.ToolCalls))
		}
	}
}
