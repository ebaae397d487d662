package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// codexPreamble is the first real Codex request's input up to its first
// request: the additional_tools item, the developer prompts and the
// environment context.
func codexPreamble(t testing.TB) (items []string, body []byte, hdr http.Header) {
	r := capture.Codex(t, "first_agent_request")
	all := gjson.GetBytes(r.Body, "input").Array()
	for _, it := range all[:len(all)-1] {
		items = append(items, it.Raw)
	}
	return items, r.Body, r.Header
}

// codexItem builds one Responses input item from raw JSON with %q verbs.
func codexItem(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// codexSession builds a Codex body: the real preamble, then one turn per
// request (a user message, an exec custom tool call working in the turn's
// checkout, its output and a closing answer), the last request alone; extra
// items go at the end.
func codexSession(t testing.TB, requests, dirs []string, extra ...string) ([]byte, http.Header) {
	items, body, hdr := codexPreamble(t)
	for i, req := range requests {
		items = append(items, codexItem(`{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]}`, req))
		if i == len(requests)-1 {
			break
		}
		id := fmt.Sprintf("call_%d", i%2) // ids repeat across turns
		js := fmt.Sprintf("const r = await tools.exec_command({cmd: \"git status\", workdir: %q});\ntext(r);\n", dirs[i])
		items = append(items,
			codexItem(`{"type":"reasoning","id":"rs_%d","summary":[],"encrypted_content":"enc-%d"}`, i, i),
			codexItem(`{"type":"custom_tool_call","id":"ctc_%d","status":"completed","call_id":%q,"name":"exec","input":%q}`, i, id, js),
			codexItem(`{"type":"custom_tool_call_output","call_id":%q,"output":[{"type":"input_text","text":%q}]}`, id, "On branch main, work of request "+fmt.Sprint(i)),
			codexItem(`{"type":"message","role":"assistant","id":"msg_%d","content":[{"type":"output_text","text":%q}]}`, i, "Done with step "+fmt.Sprint(i)),
		)
	}
	items = append(items, extra...)
	out, err := sjson.SetRawBytes(body, "input", []byte("["+strings.Join(items, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	return out, hdr.Clone()
}

// responsesAnswer answers like the Responses API over SSE: a message item
// with text, and usage.
func responsesAnswer(text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		item := fmt.Sprintf(`{"type":"message","id":"msg_up","role":"assistant","status":"completed","content":[{"type":"output_text","text":%q}]}`, text)
		fmt.Fprintf(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"output\":[]}}\n\n")
		fmt.Fprintf(w, "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":%s}\n\n", item)
		fmt.Fprintf(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"output\":[%s],\"usage\":{\"input_tokens\":100,\"input_tokens_details\":{\"cached_tokens\":40},\"output_tokens\":5}}}\n\n", item)
	}
}

// inputTexts lists the texts of a forwarded body's messages of role, less
// Codex's environment context.
func inputTexts(body []byte, role string) []string {
	var out []string
	gjson.GetBytes(body, "input").ForEach(func(_, it gjson.Result) bool {
		if it.Get("role").Str == role && it.Get("type").Str != "additional_tools" {
			c := it.Get("content")
			text := c.Get("0.text").Str
			if c.Type == gjson.String {
				text = c.Str
			}
			if !strings.HasPrefix(text, "<environment_context>") {
				out = append(out, text)
			}
		}
		return true
	})
	return out
}

// TestResponsesRouting: Codex's calls over HTTP, in router and rcm mode,
// forward only the current task's turns (reasoning items with them), keep
// the additional_tools item, the developer prompts and the environment
// context, and every field outside input byte for byte; the session is
// Codex's session-id.
func TestResponsesRouting(t *testing.T) {
	for _, mode := range []string{"router", "rcm"} {
		t.Run(mode, func(t *testing.T) {
			rec := &recorder{answer: responsesAnswer("ok")}
			srv, _ := setup(t, rec, nil)
			reqs, dirs := switchRequests, switchDirs
			var firstTask string
			for n := 1; n <= len(reqs); n++ {
				body, hdr := codexSession(t, reqs[:n], dirs)
				resp := post(t, srv.URL+"/"+mode+"/v1/responses", body, hdr)
				io.Copy(io.Discard, resp.Body)
				if resp.Header.Get(HeaderFallback) != FallbackNone || resp.Header.Get(HeaderSession) != hdr.Get("Session-Id") {
					t.Fatalf("call %d: fallback %q session %q", n, resp.Header.Get(HeaderFallback), resp.Header.Get(HeaderSession))
				}
				got, _ := rec.last(t)
				for _, f := range []string{"model", "tools", "reasoning", "include", "text", "client_metadata", "prompt_cache_key", "store", "stream"} {
					if gjson.GetBytes(got, f).Raw != gjson.GetBytes(body, f).Raw {
						t.Fatalf("call %d: %s changed", n, f)
					}
				}
				pre := gjson.GetBytes(body, "input").Array()[:6]
				for i, it := range gjson.GetBytes(got, "input").Array()[:6] {
					if it.Raw != pre[i].Raw {
						t.Fatalf("call %d: preamble item %d changed", n, i)
					}
				}
				switch n {
				case 1:
					firstTask = resp.Header.Get(HeaderTask)
					if !bytes.Equal(got, body) {
						t.Fatal("call 1: a one-task context was changed")
					}
					continue
				case 2:
					us := inputTexts(got, "user")
					if mode == "rcm" {
						// A new task's record holds the brief of task 1,
						// whose items are left out.
						if len(us) != 2 || !briefs(us[0], reqs[0]) {
							t.Fatalf("rcm call 2: forwarded user items %q", us)
						}
						us = us[1:]
					}
					if len(us) != 1 || us[0] != reqs[1] {
						t.Fatalf("call 2: forwarded %q", us)
					}
					continue
				}
				if resp.Header.Get(HeaderTask) != firstTask {
					t.Fatalf("call 3: task %q, first %q", resp.Header.Get(HeaderTask), firstTask)
				}
				us := inputTexts(got, "user")
				if mode == "rcm" {
					// The record of task 1 goes before the current request.
					if len(us) != 3 || !strings.HasPrefix(us[1], "<rcm-task-state") || !strings.Contains(us[1], reqs[0]) {
						t.Fatalf("rcm: forwarded user items %q", us)
					}
					us = []string{us[0], us[2]}
				}
				if strings.Join(us, "|") != reqs[0]+"|"+reqs[2] {
					t.Fatalf("forwarded requests %q", us)
				}
				s := string(got)
				if !strings.Contains(s, "work of request 0") || strings.Contains(s, "work of request 1") ||
					!strings.Contains(s, `"encrypted_content":"enc-0"`) || strings.Contains(s, `"enc-1"`) {
					t.Fatal("the other task's items forwarded, or the task's own (reasoning included) dropped")
				}
			}
		})
	}
}

// TestResponsesSideCalls: Codex's title call, its WebSocket prewarm sent
// over HTTP and its remote compaction pass through unchanged in every mode.
func TestResponsesSideCalls(t *testing.T) {
	rec := &recorder{answer: responsesAnswer("ok")}
	srv, _ := setup(t, rec, nil)
	for _, name := range []string{"title_request", "ws_frame_prewarm", "remote_compaction_v2_http_request"} {
		r := capture.Codex(t, name)
		for _, mode := range []string{"router", "rcm"} {
			resp := post(t, srv.URL+"/"+mode+"/v1/responses", r.Body, r.Header)
			io.Copy(io.Discard, resp.Body)
			if got, _ := rec.last(t); !bytes.Equal(got, r.Body) {
				t.Errorf("%s %s: side call modified", mode, name)
			}
			if resp.Header.Get(HeaderFallback) != FallbackSideCall {
				t.Errorf("%s %s: fallback %q", mode, name, resp.Header.Get(HeaderFallback))
			}
		}
	}
}

// TestResponsesCompaction: in rcm mode Codex's inline compaction call asks
// for one section per task with each task's requirements; the summary's
// sections go to the tasks' records.
func TestResponsesCompaction(t *testing.T) {
	summary := "## Task t1\nORM compiler crash: fixing.\n## Task t2\nURL validator test: to write."
	rec := &recorder{answer: responsesAnswer("ok")}
	srv, h := setup(t, rec, nil)
	reqs, dirs := switchRequests[:2], switchDirs
	var hdr http.Header
	for n := 1; n <= len(reqs); n++ {
		var body []byte
		body, hdr = codexSession(t, reqs[:n], dirs)
		resp := post(t, srv.URL+"/rcm/v1/responses", body, hdr)
		io.Copy(io.Discard, resp.Body)
	}
	r := capture.Codex(t, "compaction_inline_request")
	prompt := gjson.GetBytes(r.Body, "input").Array()
	body, _ := codexSession(t, []string{reqs[0], reqs[1], "x"}, dirs)
	// The compaction call: the history, then Codex's checkpoint prompt in
	// place of a new request.
	items := gjson.GetBytes(body, "input").Array()
	raw := make([]string, 0, len(items))
	for _, it := range items[:len(items)-1] {
		raw = append(raw, it.Raw)
	}
	raw = append(raw, prompt[len(prompt)-1].Raw)
	body, _ = sjson.SetRawBytes(body, "input", []byte("["+strings.Join(raw, ",")+"]"))
	chdr := hdr.Clone()
	chdr.Set("X-Codex-Turn-Metadata", r.Header.Get("X-Codex-Turn-Metadata"))
	rec.answer = responsesAnswer(summary)
	resp := post(t, srv.URL+"/rcm/v1/responses", body, chdr)
	io.Copy(io.Discard, resp.Body)
	got, _ := rec.last(t)
	last := gjson.GetBytes(got, "input").Array()
	p := last[len(last)-1].Get("content")
	if resp.Header.Get(HeaderFallback) != FallbackSideCall || p.Get("#").Int() != 2 || !strings.Contains(p.Get("1.text").Str, reqs[0]) || !strings.Contains(p.Get("1.text").Str, reqs[1]) {
		t.Fatalf("fallback %q, prompt %s", resp.Header.Get(HeaderFallback), p.Raw)
	}
	h.after.Wait() // the writes after the answer
	recs, err := h.store.Records(hdr.Get("Session-Id"))
	if err != nil || len(recs) != 2 {
		t.Fatalf("records %+v (%v)", recs, err)
	}
	for _, rc := range recs {
		if !strings.Contains(rc.Summary, map[string]string{"t1": "ORM", "t2": "URL"}[rc.Task]) {
			t.Errorf("record %s summary %q", rc.Task, rc.Summary)
		}
	}
	// Codex's next call: the earlier requests, the new one (back to task
	// 1), then the summary in a user message of its own. Task 1's call sees
	// the summary's shared text and its own section only.
	rec.answer = responsesAnswer("ok")
	items = gjson.GetBytes(body, "input").Array()
	after := []string{}
	for _, it := range items[:6] {
		after = append(after, it.Raw)
	}
	after = append(after, userItem(reqs[0]), userItem(reqs[1]), userItem(switchRequests[2]),
		userItem("Another language model started to solve this problem and produced a summary of its thinking process. Here is the summary:\nShared: one checkout.\n"+summary))
	body, _ = sjson.SetRawBytes(body, "input", []byte("["+strings.Join(after, ",")+"]"))
	resp = post(t, srv.URL+"/rcm/v1/responses", body, hdr)
	io.Copy(io.Discard, resp.Body)
	got, _ = rec.last(t)
	fwd := gjson.GetBytes(got, "input").Array()
	sum := fwd[len(fwd)-1].Get("content").String()
	if resp.Header.Get(HeaderTask) != "t1" || !strings.Contains(sum, "Another language model") || !strings.Contains(sum, "Shared: one checkout.") ||
		!strings.Contains(sum, "ORM compiler crash") || strings.Contains(sum, "URL validator test") {
		t.Fatalf("task %q, forwarded summary %q", resp.Header.Get(HeaderTask), sum)
	}
}

// TestResponsesSession: Codex's session-id, else thread-id, else the body's
// prompt_cache_key (OpenCode's Responses provider sends it too).
func TestResponsesSession(t *testing.T) {
	srv, _ := setup(t, &recorder{answer: responsesAnswer("ok")}, nil)
	body, hdr := codexSession(t, switchRequests[:1], switchDirs)
	body, _ = sjson.SetBytes(body, "prompt_cache_key", "pck_1")
	hdr.Set("Session-Id", "sid_1")
	hdr.Set("Thread-Id", "thr_1")
	for _, tc := range []struct{ del, want string }{{"", "sid_1"}, {"Session-Id", "thr_1"}, {"Thread-Id", "pck_1"}} {
		hdr.Del(tc.del)
		resp := post(t, srv.URL+"/router/v1/responses", body, hdr)
		io.Copy(io.Discard, resp.Body)
		if got := resp.Header.Get(HeaderSession); got != tc.want {
			t.Errorf("without %q: session %q, want %q", tc.del, got, tc.want)
		}
	}
}
