package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/rcm-dev/rcm/compaction"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/memory"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

func TestRCMModeInjectsFrozenRecord(t *testing.T) {
	rec := &recorder{}
	srv, h := setup(t, rec, nil)
	reqs := []string{
		"In /work/ws1 fix the crash in the ORM query compiler; keep the public API unchanged",
		"In /work/ws2 add a regression test for the URL validator",
		"Back to /work/ws1: also handle empty lookups in the compiler",
	}
	dirs := []string{"/work/ws1", "/work/ws2", "/work/ws1"}
	hdr := http.Header{"X-Session-Id": {"ses_rcm"}, "X-Rcm-Mode": {"rcm"}}
	var body3 []byte
	for n := 1; n <= 3; n++ {
		body3 = sessionBody(t, reqs[:n], dirs)
		resp := post(t, srv.URL+"/v1/chat/completions", body3, hdr)
		io.Copy(io.Discard, resp.Body)
		if resp.Header.Get(HeaderFallback) != FallbackNone {
			t.Fatalf("call %d: fallback %s", n, resp.Header.Get(HeaderFallback))
		}
	}
	got3, _ := rec.last(t)
	msgs := chattest.Messages(got3)
	// system | t1's turn (request, tool call, result, closing) | record | request 3
	if len(msgs) != 7 {
		t.Fatalf("forwarded %d messages:\n%s", len(msgs), strings.Join(msgs, "\n"))
	}
	mem := gjson.Get(msgs[5], "content").String()
	// Task t2's request only in the brief of the other tasks.
	own, _, _ := strings.Cut(mem, "Other tasks of this session")
	if !strings.HasPrefix(mem, `<rcm-task-state task="t1">`) || !strings.Contains(own, reqs[0]) || strings.Contains(own, reqs[1]) || !briefs(mem, reqs[1]) {
		t.Fatalf("memory message:\n%s", mem)
	}
	if gjson.Get(msgs[6], "content").String() != reqs[2] {
		t.Fatal("current request is not last")
	}

	// The next call of the same turn (a tool ran) forwards the same record,
	// byte for byte, and an append-only context.
	tc := `{"role":"assistant","content":"","tool_calls":[{"id":"call_9","type":"function","function":{"name":"bash","arguments":"{\"command\":\"python -m pytest tests/queries\",\"workdir\":\"/work/ws1\"}"}}]}`
	res := `{"role":"tool","tool_call_id":"call_9","content":"1 failed, 20 passed"}`
	body3b, _ := sjson.SetRawBytes(body3, "messages.-1", []byte(tc))
	body3b, _ = sjson.SetRawBytes(body3b, "messages.-1", []byte(res))
	resp := post(t, srv.URL+"/v1/chat/completions", body3b, hdr)
	io.Copy(io.Discard, resp.Body)
	got3b, _ := rec.last(t)
	msgsB := chattest.Messages(got3b)
	if len(msgsB) != len(msgs)+2 {
		t.Fatalf("second call of the turn forwarded %d messages", len(msgsB))
	}
	for i := range msgs {
		if msgs[i] != msgsB[i] {
			t.Fatalf("message %d changed within the turn:\n%s\n%s", i, msgs[i], msgsB[i])
		}
	}

	// The record learnt the test run and survives in the store.
	h.after.Wait()
	r, ok, err := h.store.Record("ses_rcm", "t1")
	if err != nil || !ok {
		t.Fatalf("record: %v %v", ok, err)
	}
	if len(r.Requirements) != 2 || r.Requirements[0].Text != reqs[0] || r.LastTest == nil {
		b, _ := json.MarshalIndent(r, "", " ")
		t.Fatalf("record:\n%s", b)
	}
}

func TestRCMModeRewritesCompaction(t *testing.T) {
	summary := "## Task t1\n- fix the ORM compiler crash\n\n## Task t2\n- validator regression test, unfinished"
	rec := &recorder{answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		content, _ := json.Marshal("ok")
		if rec := r.Header.Get("X-Test-Kind"); rec == "compaction" {
			content, _ = json.Marshal(summary)
		}
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":`+string(content)+`},"finish_reason":"stop"}]}`)
	}}
	srv, h := setup(t, rec, nil)
	reqs := []string{"In /work/ws1 fix the crash in the ORM query compiler", "In /work/ws2 add a regression test for the URL validator"}
	hdr := http.Header{"X-Session-Id": {"ses_compact"}, "X-Rcm-Mode": {"rcm"}}
	for n := 1; n <= 2; n++ {
		resp := post(t, srv.URL+"/v1/chat/completions", sessionBody(t, reqs[:n], []string{"/work/ws1", "/work/ws2"}), hdr)
		io.Copy(io.Discard, resp.Body)
	}
	body, _, _ := load(t, "compaction_manual_request")
	ch := hdr.Clone()
	ch.Set("X-Test-Kind", "compaction")
	resp := post(t, srv.URL+"/v1/chat/completions", body, ch)
	io.Copy(io.Discard, resp.Body)
	got, _ := rec.last(t)
	prompt := gjson.GetBytes(got, "messages.1.content").String()
	for _, want := range append([]string{"## Task", "t1", "t2"}, reqs...) {
		if !strings.Contains(prompt, want) {
			t.Fatalf("rewritten compaction prompt lacks %q:\n%s", want, prompt)
		}
	}
	if !strings.HasPrefix(prompt, gjson.GetBytes(body, "messages.1.content").String()) {
		t.Fatal("the harness's own prompt was not kept")
	}
	h.after.Wait()
	for _, id := range []string{"t1", "t2"} {
		r, _, err := h.store.Record("ses_compact", id)
		if err != nil || !strings.Contains(r.Summary, "## Task "+id) {
			t.Fatalf("%s: summary %q err %v", id, r.Summary, err)
		}
	}

	// After compaction OpenCode sends the recap, the summary and a new
	// request: the task is found again from its record, and the summary is
	// scoped to it.
	after, _, _ := load(t, "after_autocompaction_request")
	after, _ = sjson.SetBytes(after, "messages.2.content", summary)
	after, _ = sjson.SetRawBytes(after, "messages.-1", []byte(`{"role":"user","content":"Back in /work/ws1: also handle empty lookups"}`))
	resp = post(t, srv.URL+"/v1/chat/completions", after, hdr)
	io.Copy(io.Discard, resp.Body)
	if resp.Header.Get(HeaderTask) != "t1" || resp.Header.Get(HeaderFallback) != FallbackNone {
		t.Fatalf("after compaction: task %q fallback %q", resp.Header.Get(HeaderTask), resp.Header.Get(HeaderFallback))
	}
	got, _ = rec.last(t)
	fwd := string(got)
	if !strings.Contains(fwd, "fix the ORM compiler crash") || strings.Contains(fwd, "validator regression test") {
		t.Fatalf("summary not scoped to t1:\n%s", gjson.GetBytes(got, "messages.2.content").String())
	}
	if !strings.Contains(fwd, `<rcm-task-state task=\"t1\">`) || !strings.Contains(fwd, reqs[0]) {
		t.Fatal("t1's record not forwarded after compaction")
	}

	// Native and router modes pass compaction through untouched.
	for _, mode := range []string{"native", "router"} {
		ch.Set("X-Rcm-Mode", mode)
		resp := post(t, srv.URL+"/v1/chat/completions", body, ch)
		io.Copy(io.Discard, resp.Body)
		if got, _ := rec.last(t); string(got) != string(body) {
			t.Fatalf("%s mode changed the compaction call", mode)
		}
	}
}

// TestMemoryModel: with --memory-model the task's record gains the model's
// summary after the turn; a failing model leaves the deterministic record.
func TestMemoryModel(t *testing.T) {
	for _, fail := range []bool{false, true} {
		model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if fail {
				http.Error(w, `{"error":{"message":"down"}}`, http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"s","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Progress: compiler fixed; unfinished: tests"},"finish_reason":"stop"}]}`)
		}))
		srv, h := setup(t, &recorder{}, func(c *Config) {
			c.MemoryModel, c.MemoryBaseURL, c.MemoryAPIKey = "summ", model.URL+"/v1", "k"
		})
		hdr := http.Header{"X-Session-Id": {"ses_summ"}}
		resp := post(t, srv.URL+"/v1/chat/completions", sessionBody(t, []string{"In /work/ws1 fix the compiler crash"}, nil), hdr)
		io.Copy(io.Discard, resp.Body)
		h.after.Wait()
		r, ok, err := h.store.Record("ses_summ", "t1")
		if err != nil || !ok || len(r.Requirements) != 1 {
			t.Fatalf("fail=%v: record %+v %v %v", fail, r, ok, err)
		}
		if want := map[bool]string{false: "Progress: compiler fixed; unfinished: tests", true: ""}[fail]; r.Summary != want {
			t.Fatalf("fail=%v: summary %q", fail, r.Summary)
		}
		model.Close()
	}
}

// TestContextBudget: over --context-tokens, rcm mode condenses the task's
// older turns (long tool output cut with a marker, requests verbatim)
// before anything else.
func TestContextBudget(t *testing.T) {
	reqs := []string{"In /work/ws1 fix the compiler crash", "In /work/ws1 now add a test for it"}
	body := sessionBody(t, reqs, []string{"/work/ws1"})
	long := strings.Repeat("log line of a long test run\n", 1500) // ~42 KB of tool output
	body, _ = sjson.SetBytes(body, "messages.3.content", long)
	budget := (len(body) - 20000) / 4 // needs the long output cut, not the turn dropped
	rec := &recorder{}
	srv, _ := setup(t, rec, func(c *Config) { c.ContextTokens = budget })
	resp := post(t, srv.URL+"/v1/chat/completions", body, http.Header{"X-Session-Id": {"ses_budget"}})
	io.Copy(io.Discard, resp.Body)
	got, _ := rec.last(t)
	if len(got) > budget*4 || !strings.Contains(string(got), "[rcm: cut") {
		t.Fatalf("forwarded %d bytes for a budget of %d tokens", len(got), budget)
	}
	if rs := chattest.Requests(got); strings.Join(rs, "|") != strings.Join(reqs, "|") {
		t.Fatalf("requests not kept verbatim: %q", rs)
	}
	m, err := http.Get(srv.URL + "/rcm/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Body.Close()
	b, _ := io.ReadAll(m.Body)
	if !strings.Contains(string(b), `rcm_budget_turns_total{action="condensed"} 1`) {
		t.Fatalf("metrics:\n%s", b)
	}
}

// TestMemoryModelOncePerTurn: the memory model is asked when a turn ends
// (the answer calls no tool), not after every step of the turn.
func TestMemoryModelOncePerTurn(t *testing.T) {
	var hits int
	var mu sync.Mutex
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"progress"},"finish_reason":"stop"}]}`)
	}))
	defer model.Close()
	toolStep := true
	rec := &recorder{answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if toolStep {
			io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},"finish_reason":"tool_calls"}]}`)
			return
		}
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
	}}
	srv, h := setup(t, rec, func(c *Config) { c.MemoryModel, c.MemoryBaseURL = "summ", model.URL+"/v1" })
	hdr := http.Header{"X-Session-Id": {"ses_turn"}}
	body := sessionBody(t, []string{"In /work/ws1 list the files"}, nil)
	for _, step := range []bool{true, false} {
		toolStep = step
		resp := post(t, srv.URL+"/v1/chat/completions", body, hdr)
		io.Copy(io.Discard, resp.Body)
		h.after.Wait()
		mu.Lock()
		n := hits
		mu.Unlock()
		if want := map[bool]int{true: 0, false: 1}[step]; n != want {
			t.Fatalf("after a tool step=%v: %d model calls, want %d", step, n, want)
		}
	}
}

// TestTaskState: the compaction brief gets every part of a record it lists,
// the last test as its command and outcome.
func TestTaskState(t *testing.T) {
	full := memory.Record{
		Task:         "t2",
		Workspace:    "/work/ws2",
		Requirements: []memory.Requirement{{Text: "rename the flag", Turn: "ab"}, {Text: "and the docs", Amends: true}},
		Unfinished:   []string{"docs/cli.md"},
		FilesChanged: []string{"cli.go"},
		FilesRead:    []string{"README.md"},
		LastTest:     &memory.TestRun{Command: memory.Command{Cmd: "go test ./cli"}, Outcome: "failed: 2 of 9"},
		Progress:     []string{"renamed"},
	}
	for _, c := range []struct {
		name   string
		r      memory.Record
		active bool
		want   compaction.TaskState
	}{
		{"empty", memory.Record{Task: "t1"}, false, compaction.TaskState{ID: "t1"}},
		{"full", full, true, compaction.TaskState{
			ID: "t2", Active: true, Workspace: "/work/ws2",
			Requirements: []compaction.Requirement{{Text: "rename the flag"}, {Text: "and the docs", Amends: true}},
			Unfinished:   []string{"docs/cli.md"},
			FilesChanged: []string{"cli.go"},
			LastTest:     "go test ./cli failed: 2 of 9",
		}},
	} {
		if got := taskState(c.r, c.active); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: taskState = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// briefs reports whether a record message holds req in its brief of the
// other tasks (after the task's own state).
func briefs(record, req string) bool {
	_, others, ok := strings.Cut(record, "Other tasks of this session, whose turns this context leaves out")
	return strings.HasPrefix(record, "<rcm-task-state") && ok && strings.Contains(others, req)
}
