package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/sjson"
)

// TestNextCallRoutesAheadOfCommit: a session's calls route on the writes
// of the calls before them while their transactions still wait to commit
// (the store's writer held here, as by a slow fsync), and forward exactly
// what they forward once those have committed: the labels (a turn pinned to
// a task by header), the record frozen at a switch, the record the
// previous call updated (read by the compaction rewrite), the task it
// worked on.
func TestNextCallRoutesAheadOfCommit(t *testing.T) {
	reqs := []string{
		"In /work/ws1 fix the crash in the ORM query compiler; keep the public API unchanged",
		"In /work/ws2 add a regression test for the URL validator",
		"Back to /work/ws1: also handle empty lookups in the compiler",
	}
	dirs := []string{"/work/ws1", "/work/ws2", "/work/ws1"}
	var bodies [][]byte
	for n := 1; n <= len(reqs); n++ {
		bodies = append(bodies, sessionBody(t, reqs[:n], dirs))
	}
	tc := `{"role":"assistant","content":"","tool_calls":[{"id":"call_9","type":"function","function":{"name":"bash","arguments":"{\"command\":\"python -m pytest tests/queries\",\"workdir\":\"/work/ws1\"}"}}]}`
	res := `{"role":"tool","tool_call_id":"call_9","content":"1 failed, 20 passed"}`
	tool, _ := sjson.SetRawBytes(bodies[2], "messages.-1", []byte(tc))
	tool, _ = sjson.SetRawBytes(tool, "messages.-1", []byte(res))
	compact, _, _ := load(t, "compaction_manual_request")
	// The harness's compaction answers one section per task; its next call
	// carries the summary and returns to the first task.
	summary := "## Task t1\n- fix the ORM compiler crash, keep the API\n\n## Task t2\n- validator regression test, unfinished"
	after, _, _ := load(t, "after_autocompaction_request")
	after, _ = sjson.SetBytes(after, "messages.2.content", summary)
	after, _ = sjson.SetRawBytes(after, "messages.-1", []byte(`{"role":"user","content":"Back in /work/ws1: also handle empty lookups"}`))
	answer := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		content := "ok"
		if r.Header.Get("X-Test-Kind") == "compaction" {
			content = summary
		}
		b, _ := json.Marshal(content)
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":`+string(b)+`},"finish_reason":"stop"}]}`)
	}
	type step struct {
		body []byte
		task string // X-Rcm-Task
		// compaction: the call is the harness's compaction.
		compaction bool
	}
	for name, steps := range map[string][]step{
		// A switch and back, a test run, the harness's compaction and the
		// call after it.
		"switch": {{body: bodies[0]}, {body: bodies[1]}, {body: bodies[2]}, {body: tool}, {body: compact, compaction: true}, {body: after},
			// A second compaction: the records must keep what the first
			// history said, though the call before it no longer shows it.
			{body: compact, compaction: true}},
		// Compaction right after a switch: the task worked on last is the
		// second.
		"compact": {{body: bodies[0]}, {body: bodies[1]}, {body: compact, compaction: true}},
		// The second request pinned to the first task: the third keeps it.
		"pinned": {{body: bodies[0]}, {body: bodies[1], task: "t1"}, {body: bodies[2]}},
	} {
		for _, mode := range []string{"router", "rcm"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				call := func(srv string, rec *recorder, session string, s step) string {
					hdr := http.Header{HeaderSession: {session}, HeaderMode: {mode}}
					if s.task != "" {
						hdr.Set(HeaderTask, s.task)
					}
					if s.compaction {
						hdr.Set("X-Test-Kind", "compaction")
					}
					resp := post(t, srv+"/v1/chat/completions", s.body, hdr)
					io.Copy(io.Discard, resp.Body)
					got, _ := rec.last(t)
					return resp.Header.Get(HeaderTask) + " " + resp.Header.Get(HeaderFallback) + "\n" + string(got)
				}
				// Each call after its predecessor's writes have committed.
				ref := &recorder{answer: answer}
				refSrv, refH := setup(t, ref, nil)
				var want []string
				for _, s := range steps {
					want = append(want, call(refSrv.URL, ref, "ses", s))
					refH.after.Wait()
				}

				rec := &recorder{answer: answer}
				srv, h := setup(t, rec, nil)
				// Every call while the store's writer is held: each routes on
				// the writes of all the calls before it, none committed.
				release := holdWriter(h)
				waits := 0
				for n, s := range steps {
					if got := call(srv.URL, rec, "ses", s); got != want[n] {
						t.Errorf("call %d ahead of the commits forwarded\n%s\nwant\n%s", n, got, want[n])
					}
					// Router mode passes compaction through without waiting.
					if n > 0 && (mode == "rcm" || !s.compaction) {
						waits++
					}
				}
				release()
				h.after.Wait()
				m := metricsText(t, srv.URL)
				if want := fmt.Sprintf(`rcm_store_waits_total{outcome="ahead"} %d`+"\n", waits); !bytes.Contains(m, []byte(want)) {
					t.Fatalf("metrics lack %q:\n%s", want, m)
				}
			})
		}
	}
}

// TestEarlierCallsLetGo: a call that routed on its previous call's writes
// ahead of their commit, and whose own writes were worked out on them,
// does not keep the previous call (its body, its transcript) alive once
// both are over.
func TestEarlierCallsLetGo(t *testing.T) {
	h, srv, _ := newHandler(t, Config{Upstream: "http://127.0.0.1:9/v1", Mode: RCM})
	release := holdWriter(h)
	call := func(n int) *assembly {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
		r.Header.Set(HeaderSession, "ses_letgo")
		h.after.Add(1)
		a := h.assemble(r, transcript.OpenAIChat, RCM, 0.8, sessionBody(t, switchRequests[:n], switchDirs))
		a.complete, a.status = true, http.StatusOK
		a.resp.WriteString(`{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
		h.done(r, a)
		return a
	}
	first := weak.Make(call(1))
	second := call(2)                  // routes on the first's writes, still to commit
	<-second.call.Progress().Published // its writes are worked out on the first's
	release()
	h.after.Wait()
	if m := metricsText(t, srv.URL); !bytes.Contains(m, []byte(`rcm_store_waits_total{outcome="ahead"} 1`)) {
		t.Fatalf("the second call did not read ahead:\n%s", m)
	}
	// The goroutines that ran the writes hold their call until they
	// return, just after their slot is done: give them time (a leak stays
	// whatever the wait).
	<-second.call.Progress().Done
	for i := 0; i < 200 && first.Value() != nil; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if first.Value() != nil {
		t.Fatal("the first call is still alive: the second holds it")
	}
	runtime.KeepAlive(second)
}

// TestSessionWritesQueueBehindUncommitted: a session's next call queues
// its writes behind the previous call's as soon as those have their place
// in the store's commit order, without waiting for their commit, so a
// session's writes can share a commit; they still commit in order.
func TestSessionWritesQueueBehindUncommitted(t *testing.T) {
	h, _, _ := newHandler(t, Config{Upstream: "http://127.0.0.1:9/v1", Mode: Router})
	release := sync.OnceFunc(holdWriter(h))
	t.Cleanup(release) // before the handler closes, should the test fail
	var calls []*assembly
	for n := 1; n <= 3; n++ {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
		r.Header.Set(HeaderSession, "ses_queue")
		h.after.Add(1)
		a := h.assemble(r, transcript.OpenAIChat, Router, 0.8, sessionBody(t, switchRequests[:n], switchDirs))
		a.complete, a.status = true, http.StatusOK
		h.done(r, a)
		calls = append(calls, a)
	}
	select {
	case <-calls[2].call.Progress().Placed:
	case <-time.After(10 * time.Second):
		t.Fatal("the third call's writes wait for the first's commit")
	}
	select {
	case <-calls[0].call.Progress().Done:
		t.Fatal("the first call's writes are over while the store's writer is held")
	default:
	}
	release()
	h.after.Wait()
	events, err := h.store.Events("ses_queue", 0)
	if err != nil || len(events) != 3 {
		t.Fatalf("%d events, %v", len(events), err)
	}
	for i, e := range events {
		if e.TokensIn != calls[i].tokensIn {
			t.Fatalf("event %d is call %d's? tokens %d, want %d", i, i, e.TokensIn, calls[i].tokensIn)
		}
	}
}

// holdWriter holds the store's single writer, as a slow fsync would, until
// the returned function is called: every write transaction waits.
func holdWriter(h *Handler) (release func()) {
	held, done := make(chan struct{}), make(chan struct{})
	go h.store.Update(func(*memory.Tx) error {
		select {
		case <-held: // a queued write may run twice (memory.Store.Queue)
		default:
			close(held)
		}
		<-done
		return nil
	})
	<-held
	return func() { close(done) }
}

// TestSideCallsDoNotPassForCommitted: a title call's writes, which run
// beside the session's ordered ones, commit while an agent call's writes
// still wait to; the next agent call still reads those ahead.
func TestSideCallsDoNotPassForCommitted(t *testing.T) {
	title, hdr, _ := load(t, "title_request")
	session := hdr.Get("X-Session-Id")
	if session == "" {
		t.Fatal("the title capture names no session")
	}
	bodies := [][]byte{sessionBody(t, switchRequests[:1], switchDirs), sessionBody(t, switchRequests[:2], switchDirs), sessionBody(t, switchRequests, switchDirs)}
	// The second request is pinned to the first task: the third keeps it
	// only if it reads the second's label.
	call := func(srv string, rec *recorder, body []byte) string {
		h := http.Header{"X-Session-Id": {session}, HeaderMode: {"rcm"}}
		if bytes.Equal(body, bodies[1]) {
			h.Set(HeaderTask, "t1")
		}
		resp := post(t, srv+"/v1/chat/completions", body, h)
		io.Copy(io.Discard, resp.Body)
		got, _ := rec.last(t)
		return resp.Header.Get(HeaderTask) + "\n" + string(got)
	}
	ref := &recorder{}
	refSrv, refH := setup(t, ref, nil)
	var want []string
	for _, b := range bodies {
		want = append(want, call(refSrv.URL, ref, b))
		refH.after.Wait()
	}

	rec := &recorder{}
	srv, h := setup(t, rec, nil)
	call(srv.URL, rec, bodies[0])
	h.after.Wait()
	// Writes of an earlier call that are known but never end: the second
	// call's writes are worked out and published, and wait to commit.
	never := make(chan struct{})
	stuck, _, _ := h.store.Begin(context.Background(), session)
	h.after.Add(1)
	stuck.Run(func() {
		stuck.Commit(&memory.Write{Session: session}, func() memory.Event { <-never; return memory.Event{Kind: "agent"} })
	}, h.after.Done)
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	r.Header.Set("X-Session-Id", session)
	r.Header.Set(HeaderMode, "rcm")
	r.Header.Set(HeaderTask, "t1")
	h.after.Add(1)
	second := h.assemble(r, transcript.OpenAIChat, RCM, 0.8, bodies[1])
	second.complete, second.status = true, http.StatusOK
	second.resp.WriteString(`{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	h.done(r, second)
	<-second.call.Progress().Published
	// A title call of the session commits meanwhile, after the second
	// call's writes were worked out.
	hdr.Set(HeaderMode, "rcm")
	resp := post(t, srv.URL+"/v1/chat/completions", title, hdr)
	io.Copy(io.Discard, resp.Body)
	for i := 0; ; i++ {
		if s, ok, err := h.store.Session(session); err == nil && ok && s.Calls >= 2 {
			break
		}
		if i == 500 {
			t.Fatal("the title call's writes never committed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := call(srv.URL, rec, bodies[2]); got != want[2] {
		i := 0
		for i < len(got) && i < len(want[2]) && got[i] == want[2][i] {
			i++
		}
		t.Errorf("the third call forwarded (from byte %d)\n%.600s\nwant\n%.600s", i, got[max(0, i-300):], want[2][max(0, i-300):])
	}
	close(never)
	h.after.Wait()
}
