package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
)

// sessionBody builds an OpenCode-style body from the real capture's system
// prompt and tools plus one turn per request, each working in its checkout
// through a bash tool call, as a switch session does.
func sessionBody(t *testing.T, requests []string, dirs []string) []byte {
	t.Helper()
	var ms []chat.Message
	for i, req := range requests {
		ms = append(ms, chattest.User(req))
		if i == len(requests)-1 {
			break
		}
		id := fmt.Sprintf("call_%d", i%2) // ids repeat across turns, as they do in real sessions
		ms = append(ms,
			chattest.ToolCall(id, "bash", map[string]string{"command": "git status", "workdir": dirs[i], "description": "status"}),
			chattest.ToolResult(id, "On branch main, work of request "+fmt.Sprint(i)),
			chattest.Assistant("Done with step "+fmt.Sprint(i)),
		)
	}
	return chattest.OpenCodeBody(t, ms...)
}

// switchRequests are a session that switches from task 1 (checkout ws1) to
// task 2 (ws2) and back; switchDirs the checkout each turn works in.
var (
	switchRequests = []string{
		"In /work/ws1 fix the crash in the ORM query compiler",
		"In /work/ws2 add a regression test for the URL validator",
		"Back to /work/ws1: also handle empty lookups in the compiler",
	}
	switchDirs = []string{"/work/ws1", "/work/ws2", "/work/ws1"}
)

func TestRouterModeDropsOtherTasks(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, nil)
	reqs, dirs := switchRequests, switchDirs
	hdr := http.Header{"X-Session-Id": {"ses_route"}, "X-Rcm-Mode": {"router"}}
	var firstTask string
	for n := 1; n <= len(reqs); n++ {
		body := sessionBody(t, reqs[:n], dirs)
		resp := post(t, srv.URL+"/v1/chat/completions", body, hdr)
		io.Copy(io.Discard, resp.Body)
		if resp.Header.Get(HeaderFallback) != FallbackNone {
			t.Fatalf("call %d: fallback %q", n, resp.Header.Get(HeaderFallback))
		}
		if n == 1 {
			firstTask = resp.Header.Get(HeaderTask)
		}
		got, _ := rec.last(t)
		switch n {
		case 1:
			if string(got) != string(body) {
				t.Fatal("call 1: a one-task context was changed")
			}
			continue
		case 2:
			if us := chattest.Requests(got); len(us) != 1 || us[0] != reqs[1] || resp.Header.Get(HeaderTask) == firstTask {
				t.Fatalf("call 2 opens a task: forwarded %q as %q", us, resp.Header.Get(HeaderTask))
			}
			continue
		}
		if resp.Header.Get(HeaderTask) != firstTask || resp.Header.Get(HeaderConfidence) == "" {
			t.Fatalf("call 3: task %q (first %q) confidence %q", resp.Header.Get(HeaderTask), firstTask, resp.Header.Get(HeaderConfidence))
		}
		if us := chattest.Requests(got); strings.Join(us, "|") != reqs[0]+"|"+reqs[2] {
			t.Fatalf("forwarded requests %q", us)
		}
		if !strings.Contains(string(got), "work of request 0") || strings.Contains(string(got), "work of request 1") {
			t.Fatal("tool traffic of the other task forwarded, or the task's own dropped")
		}
		if resp.Header.Get(HeaderTokensOut) >= resp.Header.Get(HeaderTokensIn) && len(got) >= len(body) {
			t.Fatal("routed context not smaller")
		}
		// Everything but the messages array is byte-identical.
		if gjson.GetBytes(got, "tools").Raw != gjson.GetBytes(body, "tools").Raw || gjson.GetBytes(got, "model").Raw != gjson.GetBytes(body, "model").Raw {
			t.Fatal("fields outside messages changed")
		}
	}
}

func TestThresholdFallbackKeepsEverything(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, nil)
	// No checkout, tag or overlap: the last request cannot be placed.
	reqs := []string{
		"In /work/ws1 fix the crash in the ORM query compiler",
		"In /work/ws2 add a regression test for the URL validator",
		"What's the weather like?",
	}
	body := sessionBody(t, reqs, []string{"/work/ws1", "/work/ws2"})
	hdr := http.Header{"X-Session-Id": {"ses_fallback"}, "X-Rcm-Mode": {"router"}, "X-Rcm-Threshold": {"0.99"}}
	resp := post(t, srv.URL+"/v1/chat/completions", body, hdr)
	io.Copy(io.Discard, resp.Body)
	got, _ := rec.last(t)
	if resp.Header.Get(HeaderFallback) != FallbackThreshold || string(got) != string(body) {
		t.Fatalf("fallback %q, forwarded changed: %v", resp.Header.Get(HeaderFallback), string(got) != string(body))
	}
}

func TestExplicitTaskHeader(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, nil)
	body := sessionBody(t, []string{"write the release notes"}, nil)
	hdr := http.Header{"X-Session-Id": {"ses_tag"}, "X-Rcm-Mode": {"router"}, "X-Rcm-Task": {"notes"}}
	resp := post(t, srv.URL+"/v1/chat/completions", body, hdr)
	io.Copy(io.Discard, resp.Body)
	if resp.Header.Get(HeaderTask) != "notes" {
		t.Fatalf("task %q", resp.Header.Get(HeaderTask))
	}
	if _, req := rec.last(t); req.Header.Get(HeaderTask) != "" {
		t.Fatal("X-RCM-Task leaked upstream")
	}
}

func TestInspector(t *testing.T) {
	rec := &recorder{}
	srv, h := setup(t, rec, nil)
	reqs := []string{"In /work/ws1 fix the compiler crash", "In /work/ws2 add the validator test"}
	hdr := http.Header{"X-Session-Id": {"ses_insp"}, "X-Rcm-Mode": {"router"}}
	for n := 1; n <= 2; n++ {
		resp := post(t, srv.URL+"/v1/chat/completions", sessionBody(t, reqs[:n], []string{"/work/ws1", "/work/ws2"}), hdr)
		io.Copy(io.Discard, resp.Body)
	}
	h.after.Wait()
	get := func(path string) (int, []byte) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, b := get("/rcm/sessions")
	if code != 200 || gjson.GetBytes(b, "#").Int() != 1 || gjson.GetBytes(b, "0.id").String() != "ses_insp" {
		t.Fatalf("sessions: %d %s", code, b)
	}
	code, b = get("/rcm/sessions/ses_insp")
	var v SessionView
	if err := json.Unmarshal(b, &v); err != nil || code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	if len(v.Tasks) != 2 || len(v.Events) != 2 || v.Events[1].Task != v.Tasks[1].ID || v.Events[1].Mode != "router" {
		t.Fatalf("view %+v", v)
	}
	if code, _ = get("/rcm/sessions/nope"); code != 404 {
		t.Fatalf("unknown session: %d", code)
	}
	if code, _ = get("/rcm/sessions/ses_insp?events=x"); code != 400 {
		t.Fatalf("bad query: %d", code)
	}
	if code, _ = get("/rcm/healthz"); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
}

func TestMetrics(t *testing.T) {
	body, _, _ := load(t, "continue_request")
	b := callModes(t, "native", "router", "router")
	for _, want := range []string{
		"# TYPE rcm_calls_total counter",
		`rcm_calls_total{fallback="none",kind="-",mode="native",status="2xx"} 1`,
		// Whether the router placed its calls is the fitted model's
		// (fallback="none" or "threshold"): the kind, mode and status count.
		`kind="agent",mode="router",status="2xx"} 2`,
		`rcm_tokens_in_total{mode="router"} `,
		// The second router call took over every message the first one
		// parsed: it read only what follows the last of them.
		`rcm_parse_bytes_total{how="reused"} ` + fmt.Sprint(lastMessageEnd(t, body)),
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q:\n%s", want, b)
		}
	}
}

// lastMessageEnd returns the offset in a chat body where its last message
// ends.
func lastMessageEnd(t *testing.T, body []byte) int {
	tr, err := transcript.Parse(transcript.OpenAIChat, body, transcript.Hints{})
	if err != nil {
		t.Fatal(err)
	}
	last := tr.Messages[len(tr.Messages)-1].Raw
	return bytes.Index(body, last) + len(last)
}

func TestParseKey(t *testing.T) {
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	chat, msgs := transcript.OpenAIChat, transcript.AnthropicMessages
	parent := parseKey(h("X-Claude-Code-Session-Id", "s1"), msgs)
	for _, c := range []struct {
		name string
		a, b string
		same bool
	}{
		{"a session's calls", parseKey(h("X-Session-Id", "s1"), chat), parseKey(h("X-Session-Id", "s1"), chat), true},
		{"two sessions", parseKey(h("X-Session-Id", "s1"), chat), parseKey(h("X-Session-Id", "s2"), chat), false},
		{"two formats", parseKey(h("X-Session-Id", "s1"), chat), parseKey(h("X-Session-Id", "s1"), msgs), false},
		{"a subagent and its parent", parent, parseKey(h("X-Claude-Code-Session-Id", "s1", headerAgent, "a1"), msgs), false},
	} {
		if (c.a == c.b) != c.same || c.a == "" || c.b == "" {
			t.Errorf("%s: keys %q and %q", c.name, c.a, c.b)
		}
	}
	if k := parseKey(h(), chat); k != "" {
		t.Errorf("no session header: key %q, want none (parsed whole)", k)
	}
}
