package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/internal/scripted"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// claudeCapture is a real Messages request: Claude Code's, or OpenCode's
// Anthropic provider's (named "opencode_...").
type claudeCapture struct {
	name, path string
	body       []byte
	h          http.Header
}

func claudeCaptures(t *testing.T) []claudeCapture {
	t.Helper()
	var out []claudeCapture
	for _, name := range capture.NamesIn(t, capture.ClaudeCodeDir()) {
		r := capture.LoadIn(t, capture.ClaudeCodeDir(), name)
		out = append(out, claudeCapture{name, r.Path, r.Body, r.Header})
	}
	r := capture.Load(t, "anthropic_messages_request")
	return append(out, claudeCapture{"opencode_anthropic_messages_request", r.Path, r.Body, r.Header})
}

// sseReply answers like the Messages API's stream, with one of Claude
// Code's accepted fake answers.
func sseReply(t *testing.T, name string) http.HandlerFunc {
	b, err := os.ReadFile(filepath.Join(capture.ClaudeCodeDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(b)
	}
}

// checkMessages reports what makes body an invalid Messages request by the
// rules rcm must keep: the first message (past role "system" entries) is
// the user's; each assistant's tool_use is answered by tool_result blocks
// that open the next user message; no empty text block; at most 4
// cache_control breakpoints.
func checkMessages(body []byte) error {
	if !gjson.ValidBytes(body) {
		return fmt.Errorf("not JSON")
	}
	if n := strings.Count(string(body), `"cache_control"`); n > 4 {
		return fmt.Errorf("%d cache_control breakpoints", n)
	}
	var msgs []gjson.Result
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		if m.Get("role").Str != "system" {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) > 0 && msgs[0].Get("role").Str != "user" {
		return fmt.Errorf("first message is %s", msgs[0].Get("role").Str)
	}
	var pending []string
	for i, m := range msgs {
		blocks := m.Get("content").Array()
		for _, b := range blocks {
			if b.Get("type").Str == "text" && b.Get("text").Str == "" {
				return fmt.Errorf("message %d: empty text block", i)
			}
		}
		if m.Get("role").Str == "assistant" {
			if len(pending) > 0 && (i == 0 || msgs[i-1].Get("role").Str != "assistant") {
				return fmt.Errorf("message %d: tool_use %v unanswered", i, pending)
			}
			for _, b := range blocks {
				if b.Get("type").Str == "tool_use" {
					pending = append(pending, b.Get("id").Str)
				}
			}
			continue
		}
		results := true
		for _, b := range blocks {
			isResult := b.Get("type").Str == "tool_result"
			if isResult && !results {
				return fmt.Errorf("message %d: tool_result after other blocks", i)
			}
			results = results && isResult
			if isResult {
				id := b.Get("tool_use_id").Str
				j := slices.Index(pending, id)
				if j < 0 {
					return fmt.Errorf("message %d: tool_result %s answers no tool_use", i, id)
				}
				pending = append(pending[:j], pending[j+1:]...)
			}
		}
		if len(pending) > 0 && i < len(msgs)-1 {
			return fmt.Errorf("message %d: tool_use %v unanswered", i, pending)
		}
	}
	return nil
}

// sameOutsideMessages reports the first top-level field (other than
// messages) whose bytes differ between a and b.
func sameOutsideMessages(a, b []byte) error {
	keys := map[string]bool{}
	for _, body := range [][]byte{a, b} {
		gjson.ParseBytes(body).ForEach(func(k, _ gjson.Result) bool {
			keys[k.Str] = true
			return true
		})
	}
	for k := range keys {
		if k != "messages" && gjson.GetBytes(a, k).Raw != gjson.GetBytes(b, k).Raw {
			return fmt.Errorf("field %s changed", k)
		}
	}
	return nil
}

// TestMessagesCapturesAllModes: every real Messages capture goes through
// each mode: native forwards the bytes, the path and ?beta=true unchanged;
// router and rcm forward a valid request whose fields other than messages
// are byte-identical, without failing open. Anthropic's headers pass as
// sent and the session is Claude Code's.
func TestMessagesCapturesAllModes(t *testing.T) {
	for _, mode := range []string{"native", "router", "rcm"} {
		rec := &recorder{answer: sseReply(t, "fake_reply_text.sse.txt")}
		srv, h := setup(t, rec, nil)
		for _, c := range claudeCaptures(t) {
			hdr := c.h.Clone()
			hdr.Set("X-RCM-Mode", mode)
			resp := post(t, srv.URL+c.path, c.body, hdr)
			io.Copy(io.Discard, resp.Body)
			h.after.Wait()
			got, req := rec.last(t)
			path, query, _ := strings.Cut(c.path, "?")
			if req.URL.Path != path || req.URL.RawQuery != query {
				t.Errorf("%s %s: upstream got %s?%s", mode, c.name, req.URL.Path, req.URL.RawQuery)
			}
			for _, k := range []string{"X-Api-Key", "Authorization", "Anthropic-Version", "Anthropic-Beta", "X-Claude-Code-Session-Id", "X-Claude-Code-Agent-Id"} {
				if req.Header.Get(k) != c.h.Get(k) {
					t.Errorf("%s %s: header %s = %q, sent %q", mode, c.name, k, req.Header.Get(k), c.h.Get(k))
				}
			}
			if path != "/v1/messages" {
				// count_tokens: a side route, forwarded as is, no state.
				if !bytes.Equal(got, c.body) || resp.Header.Get(HeaderSession) != "" {
					t.Errorf("%s %s: side route changed or tracked", mode, c.name)
				}
				continue
			}
			if mode == "native" && !bytes.Equal(got, c.body) {
				t.Errorf("native %s: body changed", c.name)
			}
			if err := checkMessages(got); err != nil {
				t.Errorf("%s %s: %v", mode, c.name, err)
			}
			if err := sameOutsideMessages(got, c.body); err != nil {
				t.Errorf("%s %s: %v", mode, c.name, err)
			}
			if fb := resp.Header.Get(HeaderFallback); fb == FallbackError {
				t.Errorf("%s %s: failed open", mode, c.name)
			}
			want := c.h.Get("X-Claude-Code-Session-Id")
			if want == "" {
				want = c.h.Get("X-Session-Id")
			}
			if got := resp.Header.Get(HeaderSession); got != want {
				t.Errorf("%s %s: session %q, want %q", mode, c.name, got, want)
			}
		}
	}
}

// claudeBody is a Claude Code request (the first_agent capture's system,
// tools and other fields) whose messages are the given requests as turns:
// the first carries Claude Code's reminder block and is followed by its
// environment system entry; each earlier turn ran one Bash command in its
// checkout (dirs[i]) and answered; the last message's last block carries
// the cache breakpoint, as Claude Code sends it.
func claudeBody(t *testing.T, requests, dirs []string) []byte {
	t.Helper()
	body := capture.LoadIn(t, capture.ClaudeCodeDir(), "first_agent_request").Body
	q := func(s string) string { return gjson.Get(mustSet(t, s), "x").Raw }
	var ms []string
	for i, req := range requests {
		last := i == len(requests)-1
		cc := ""
		if last {
			cc = `,"cache_control":{"type":"ephemeral"}`
		}
		if i == 0 {
			ms = append(ms, `{"role":"user","content":[{"type":"text","text":"<system-reminder>\ngit status: clean\n</system-reminder>\n"},{"type":"text","text":`+q(req)+cc+`}]}`,
				`{"role":"system","content":"# Environment\n - Primary working directory: /home/user/project"}`)
		} else {
			ms = append(ms, `{"role":"user","content":[{"type":"text","text":`+q(req)+cc+`}]}`)
		}
		if last {
			break
		}
		id := fmt.Sprintf("toolu_%d", i%2) // ids repeat across turns
		ms = append(ms,
			`{"role":"assistant","content":[{"type":"thinking","thinking":"","signature":"sig`+fmt.Sprint(i)+`"},{"type":"text","text":"I will run it."},{"type":"tool_use","id":"`+id+`","name":"Bash","input":{"command":`+q("cd "+dirs[i]+" && git status")+`}}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id+`","content":`+q(fmt.Sprintf("On branch main, work of request %d", i))+`,"is_error":false}]}`,
			`{"role":"assistant","content":[{"type":"text","text":"Done with step `+fmt.Sprint(i)+`"}]}`)
	}
	out, err := sjson.SetRawBytes(body, "messages", []byte("["+strings.Join(ms, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// requestsOf lists the user requests (text blocks, reminders aside) of a
// forwarded Messages body.
func requestsOf(body []byte) []string {
	var out []string
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		if m.Get("role").Str != "user" {
			continue
		}
		if c := m.Get("content"); c.Type == gjson.String {
			out = append(out, c.Str)
			continue
		}
		for _, b := range m.Get("content").Array() {
			if b.Get("type").Str == "text" && !strings.HasPrefix(b.Get("text").Str, "<") {
				out = append(out, b.Get("text").Str)
			}
		}
	}
	return out
}

// TestMessagesRouting: Claude Code's session switching from task 1 to task
// 2 and back forwards, on the return, only task 1's turns (thinking
// signatures and role "system" entries kept), a valid request, and in rcm
// mode task 1's record and none of task 2's words. A subagent's call
// (same session, x-claude-code-agent-id) belongs to the parent's current
// task and goes out as sent.
func TestMessagesRouting(t *testing.T) {
	for _, mode := range []string{"router", "rcm"} {
		t.Run(mode, func(t *testing.T) {
			rec := &recorder{answer: sseReply(t, "fake_reply_text.sse.txt")}
			srv, h := setup(t, rec, nil)
			hdr := http.Header{"X-Claude-Code-Session-Id": {"cc-" + mode}, "X-Rcm-Mode": {mode}, "X-Api-Key": {"sk-client"},
				"Anthropic-Version": {"2023-06-01"}}
			var first string
			for n := 1; n <= len(switchRequests); n++ {
				body := claudeBody(t, switchRequests[:n], switchDirs)
				resp := post(t, srv.URL+"/v1/messages?beta=true", body, hdr)
				io.Copy(io.Discard, resp.Body)
				h.after.Wait()
				got, _ := rec.last(t)
				if err := checkMessages(got); err != nil {
					t.Fatalf("call %d: %v\n%s", n, err, got)
				}
				if err := sameOutsideMessages(got, body); err != nil {
					t.Fatalf("call %d: %v", n, err)
				}
				if fb := resp.Header.Get(HeaderFallback); fb != FallbackNone {
					t.Fatalf("call %d: fallback %s", n, fb)
				}
				task := resp.Header.Get(HeaderTask)
				switch n {
				case 1:
					first = task
					if !bytes.Equal(got, body) {
						t.Fatal("call 1: a one-task context was changed")
					}
				case 2:
					reqs := requestsOf(got)
					if mode == "rcm" {
						// The new task's record: the brief of the first.
						if len(reqs) != 2 || !briefs(reqs[0], switchRequests[0]) {
							t.Fatalf("rcm call 2: forwarded %q", reqs)
						}
						reqs = reqs[1:]
					}
					if task == first || strings.Join(reqs, "|") != switchRequests[1] {
						t.Fatalf("call 2: task %q, forwarded %q", task, reqs)
					}
					// The subagent started by this turn belongs to its task.
					sub := capture.LoadIn(t, capture.ClaudeCodeDir(), "subagent_request_with_agent_id")
					sh := hdr.Clone()
					sh.Set("X-Claude-Code-Agent-Id", sub.Header.Get("X-Claude-Code-Agent-Id"))
					resp := post(t, srv.URL+"/v1/messages?beta=true", sub.Body, sh)
					io.Copy(io.Discard, resp.Body)
					h.after.Wait()
					if sg, _ := rec.last(t); !bytes.Equal(sg, sub.Body) || resp.Header.Get(HeaderTask) != task {
						t.Fatalf("subagent: task %q (parent's %q), body kept %v", resp.Header.Get(HeaderTask), task, bytes.Equal(sg, sub.Body))
					}
				case 3:
					if task != first {
						t.Fatalf("call 3: task %q, want %q", task, first)
					}
					reqs := requestsOf(got)
					if mode == "rcm" {
						if len(reqs) != 3 || !strings.Contains(reqs[1], "<rcm-task-state") || !strings.Contains(reqs[1], switchRequests[0]) {
							t.Fatalf("rcm: record missing: %q", reqs)
						}
						reqs = []string{reqs[0], reqs[2]}
					}
					if strings.Join(reqs, "|") != switchRequests[0]+"|"+switchRequests[2] {
						t.Fatalf("call 3 forwarded %q", reqs)
					}
					s := string(got)
					turns := chattest.OutsideRecords(s)
					if strings.Contains(turns, "work of request 1") || strings.Contains(turns, "/work/ws2") || !strings.Contains(s, "work of request 0") {
						t.Fatal("the other task's turns forwarded, or the task's own dropped")
					}
					if !strings.Contains(s, `"signature":"sig0"`) || !strings.Contains(s, "# Environment") {
						t.Fatal("thinking block or system entry lost")
					}
				}
			}
		})
	}
}

// TestMessagesCompaction: in rcm mode Claude Code's summarisation call
// gets every task's brief and keeps the <summary> contract; after it, each
// task's call sees the general text and its own section of the summary,
// never the other task's.
func TestMessagesCompaction(t *testing.T) {
	var tasks []string
	summary := func() string {
		return "<analysis>both tasks</analysis>\n<summary>\nShared: two checkouts.\n\n## Task " + tasks[0] +
			"\n### Objective\n- fix the ORM compiler (ALPHA)\n\n## Task " + tasks[1] + "\n### Objective\n- URL validator test (BRAVO)\n</summary>"
	}
	up := scripted.New(scripted.Script{Rules: []scripted.Rule{{When: scripted.Match{Kind: "compaction"},
		Answer: func(scripted.Call) (scripted.Reply, bool) { return scripted.Reply{Text: summary()}, true }}},
		Default: scripted.Reply{Text: "Done."}})
	srv, h := setup(t, up, nil)
	hdr := http.Header{"X-Claude-Code-Session-Id": {"cc-compact"}, "X-Rcm-Mode": {"rcm"}}
	send := sendMessages(t, srv, h, hdr)
	for n := 1; n <= 2; n++ {
		tasks = append(tasks, send(claudeBody(t, switchRequests[:n], switchDirs)).Header.Get(HeaderTask))
	}
	if tasks[0] == "" || tasks[0] == tasks[1] {
		t.Fatalf("tasks %q", tasks)
	}
	// Auto-compaction: the instruction as a user message of its own.
	body := claudeBody(t, switchRequests[:2], switchDirs)
	instr := "CRITICAL: Respond with TEXT ONLY.\n\nYour task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests."
	body, _ = sjson.SetRawBytes(body, "messages.-1", []byte(`{"role":"assistant","content":[{"type":"text","text":"Done."}]}`))
	body, _ = sjson.SetBytes(body, "messages.-1", map[string]any{"role": "user", "content": instr})
	resp := send(body)
	if resp.Header.Get(HeaderFallback) != FallbackSideCall {
		t.Fatalf("compaction: fallback %q", resp.Header.Get(HeaderFallback))
	}
	sent := up.Requests()
	compactionPrompt := string(sent[len(sent)-1].Body)
	if r := sent[len(sent)-1]; r.Kind != "compaction" || r.Rule != 0 {
		t.Fatalf("the compaction call reached the upstream as %s, answered by rule %d", r.Kind, r.Rule)
	}
	last := gjson.Get(compactionPrompt, "messages.@reverse.0.content").String()
	if !strings.HasPrefix(last, instr) || !strings.Contains(last, "## Task "+tasks[0]) || !strings.Contains(last, "<summary></summary>") {
		t.Fatalf("compaction prompt not task-aware: %q", last)
	}
	if err := checkMessages([]byte(compactionPrompt)); err != nil {
		t.Fatal(err)
	}
	// The turn after: Claude Code's continuation message holds the summary.
	cont := "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nSummary:\n" +
		strings.TrimSuffix(strings.SplitN(summary(), "<summary>\n", 2)[1], "</summary>") +
		"\n\nIf you need specific details from before compaction, read the full transcript.\nContinue the conversation from where it left off."
	after := capture.LoadIn(t, capture.ClaudeCodeDir(), "first_agent_request").Body
	// As Claude Code sends it (after_manual_compaction_request): the
	// environment entry comes last.
	env := gjson.GetBytes(after, "messages.1").Raw
	msgs := `[{"role":"user","content":[{"type":"text","text":"<system-reminder>\nctx\n</system-reminder>\n"},{"type":"text","text":` + gjson.Get(mustSet(t, cont), "x").Raw + `}]},` +
		`{"role":"system","content":[]},{"role":"assistant","content":[{"type":"text","text":"Done."}]},` +
		`{"role":"user","content":[{"type":"text","text":` + gjson.Get(mustSet(t, switchRequests[2]), "x").Raw + `,"cache_control":{"type":"ephemeral"}}]},` + env + `]`
	after, _ = sjson.SetRawBytes(after, "messages", []byte(msgs))
	resp = send(after)
	sent = up.Requests()
	got := sent[len(sent)-1].Body
	if resp.Header.Get(HeaderTask) != tasks[0] {
		t.Fatalf("after compaction: task %q, want %q", resp.Header.Get(HeaderTask), tasks[0])
	}
	s := string(got)
	if !strings.Contains(s, "ALPHA") || strings.Contains(s, "BRAVO") || !strings.Contains(s, "Shared: two checkouts") ||
		!strings.Contains(s, "If you need specific details") || !strings.Contains(s, "<system-reminder>") {
		t.Fatalf("summary not scoped to the task:\n%s", gjson.GetBytes(got, "messages.0").Raw)
	}
	if err := checkMessages(got); err != nil {
		t.Fatal(err)
	}
}

// sendMessages returns a function that posts a Messages body with hdr,
// reads the answer and waits for the call's writes.
func sendMessages(t *testing.T, srv *httptest.Server, h *Handler, hdr http.Header) func([]byte) *http.Response {
	return func(body []byte) *http.Response {
		resp := post(t, srv.URL+"/v1/messages?beta=true", body, hdr)
		io.Copy(io.Discard, resp.Body)
		h.after.Wait()
		return resp
	}
}

func mustSet(t *testing.T, s string) string {
	t.Helper()
	out, err := sjson.Set("", "x", s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRouterAfterCompaction: router mode writes no task records, so once
// Claude Code's compaction replaced the history with its summary, the
// tasks are known by their names alone. The request after the summary is
// still scored against them: without a description of any task the
// router had nothing to route on, and every call of the rest of the
// session fell back at confidence 0.
func TestRouterAfterCompaction(t *testing.T) {
	up := scripted.New(scripted.Script{Default: scripted.Reply{Text: "Done."}})
	srv, h := setup(t, up, nil)
	hdr := http.Header{"X-Claude-Code-Session-Id": {"cc-router-compact"}, "X-Rcm-Mode": {"router"}}
	send := sendMessages(t, srv, h, hdr)
	task := send(claudeBody(t, []string{"Add a CSV export to the reports page, with one row per invoice"}, nil)).Header.Get(HeaderTask)
	if task == "" {
		t.Fatal("no task opened")
	}
	cont := "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nSummary:\n1. Primary Request and Intent: a CSV export of the reports page.\n\nContinue the conversation from where it left off."
	for _, req := range []string{"did you push?", "¿ya hiciste push?"} {
		body := claudeBody(t, []string{cont, req}, []string{"/home/user/project"})
		resp := send(body)
		conf, _ := strconv.ParseFloat(resp.Header.Get(HeaderConfidence), 64)
		if resp.Header.Get(HeaderTask) != task || conf <= 0 {
			t.Fatalf("%q after compaction: task %q at %s (fallback %q), want %q scored", req,
				resp.Header.Get(HeaderTask), resp.Header.Get(HeaderConfidence), resp.Header.Get(HeaderFallback), task)
		}
		t.Logf("%q: %s at %.2f, fallback %q", req, task, conf, resp.Header.Get(HeaderFallback))
	}
}
