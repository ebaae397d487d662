package scripted

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
)

// loadCapture reads a request OpenCode 1.18.33 sent (the repository's
// testdata/opencode).
func loadCapture(t testing.TB, name string) capture.Request {
	t.Helper()
	return capture.Load(t, strings.TrimSuffix(name, ".json"))
}

// replay sends a capture as OpenCode did (its headers but the transport's own).
func replay(t *testing.T, url string, c capture.Request) *http.Response {
	t.Helper()
	var h []string
	for k, vs := range c.Header {
		for _, v := range vs {
			h = append(h, k, v)
		}
	}
	return post(t, url, c.Body, h...)
}

func TestOpenCodeWorkdirAndKinds(t *testing.T) {
	first := loadCapture(t, "first_agent_request.json")
	if c := readChat(first.Body, nil); c.workdir != "/home/dev/project" || c.Kind != "agent" || c.Last != "user" || c.User != `"List the files here using a tool"` {
		t.Fatalf("first agent call read as %+v", c)
	}
	script, err := LoadScriptFile(filepath.Join("testdata", "opencode_script.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv, url := serve(t, script)

	a := assemble(t, readEvents(t, replay(t, url, first).Body))
	if len(a.calls) != 1 || a.calls[0].Name != "bash" || a.calls[0].Arguments != `{"command":"ls /home/dev/project","description":"List files"}` ||
		a.finish != "tool_calls" || a.usage == nil || a.usage.Prompt != 9000 {
		t.Fatalf("first agent call answered %+v", a)
	}

	a = assemble(t, readEvents(t, replay(t, url, loadCapture(t, "title_request.json")).Body))
	if a.text != "Scripted session" || a.finish != "stop" {
		t.Fatalf("title call answered %+v", a)
	}

	a = assemble(t, readEvents(t, replay(t, url, loadCapture(t, "tool_result_request.json")).Body))
	if a.text != "Listed the files of /home/dev/project." {
		t.Fatalf("tool result call answered %+v", a)
	}

	a = assemble(t, readEvents(t, replay(t, url, loadCapture(t, "compaction_manual_request.json")).Body))
	if a.text != "## Summary\nScripted summary." {
		t.Fatalf("compaction call answered %+v", a)
	}

	// The rule for the tool result was used up: the default error answers.
	resp := replay(t, url, loadCapture(t, "tool_result_request.json"))
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 500 || !bytes.Contains(raw, []byte("no scripted reply")) {
		t.Fatalf("after times ran out: %d %s", resp.StatusCode, raw)
	}

	rs := srv.Requests()
	wantKinds := []string{"agent", "title", "agent", "compaction", "agent"}
	wantRules := []int{2, 0, 3, 1, AnsweredByDefault}
	for i, r := range rs {
		if r.Kind != wantKinds[i] || r.Rule != wantRules[i] || r.Header.Get("User-Agent") == "" {
			t.Errorf("request %d: kind %q rule %d, want %q %d", i, r.Kind, r.Rule, wantKinds[i], wantRules[i])
		}
	}
	if !bytes.Equal(rs[0].Body, first.Body) {
		t.Error("first request not recorded byte-exact")
	}
	if got := len(srv.Session("ses_dd47497a7ffeto0S6QCKCcT5Cd")); got != 4 {
		t.Errorf("%d requests of the capture's session, want 4 (compaction is another session)", got)
	}
}

func TestOpenCodeSubagent(t *testing.T) {
	_, url := serve(t, Script{Rules: []Rule{{When: Match{Kind: "subagent"}, Reply: Reply{Text: "sub"}}}})
	a := assemble(t, readEvents(t, replay(t, url, loadCapture(t, "subagent_request_with_parent_header.json")).Body))
	if a.text != "sub" {
		t.Fatalf("subagent call answered %+v", a)
	}
}
