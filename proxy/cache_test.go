package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/tidwall/gjson"
)

// turnMessages is one turn of a session as OpenCode sends it: the request,
// a tool call in dir and its output, and the closing answer.
func turnMessages(i int, req, dir, out string) []chat.Message {
	id := fmt.Sprintf("call_%d", i%2) // ids repeat across turns, as they do in real sessions
	return []chat.Message{
		chattest.User(req),
		chattest.ToolCall(id, "bash", map[string]string{"command": "git status", "workdir": dir, "description": "status"}),
		chattest.ToolResult(id, out),
		chattest.Assistant(fmt.Sprintf("Done with step %d", i)),
	}
}

// cacheSession is a session's messages and the calls it makes: each call
// sends the first n messages, two calls per turn (at the request, and
// after the tool ran).
type cacheSession struct {
	msgs  []chat.Message
	calls []int
	turn  []int // the turn of each call
}

func newCacheSession(reqs, dirs []string, out func(i int) string) *cacheSession {
	s := &cacheSession{}
	for i, req := range reqs {
		start := len(s.msgs)
		s.msgs = append(s.msgs, turnMessages(i, req, dirs[i], out(i))...)
		s.calls = append(s.calls, start+1, start+3)
		s.turn = append(s.turn, i, i)
	}
	return s
}

// send sends every call of s through srv in mode and returns what the
// upstream received, failing unless each call was routed.
func (s *cacheSession) send(t *testing.T, srv *httptest.Server, rec *recorder, session, mode string) [][]byte {
	t.Helper()
	// These tests are about what the routed calls forward, not about the
	// router's calibration: a threshold of 0.6 keeps their follow-ups
	// ("also ...") routed.
	hdr := http.Header{"X-Session-Id": {session}, "X-Rcm-Mode": {mode}, "X-Rcm-Threshold": {"0.6"}}
	var out [][]byte
	for k, n := range s.calls {
		resp := post(t, srv.URL+"/v1/chat/completions", chattest.OpenCodeBody(t, s.msgs[:n]...), hdr)
		io.Copy(io.Discard, resp.Body)
		if fb := resp.Header.Get(HeaderFallback); fb != FallbackNone {
			t.Fatalf("call %d: fallback %s (task %s conf %s)", k, fb, resp.Header.Get(HeaderTask), resp.Header.Get(HeaderConfidence))
		}
		got, _ := rec.last(t)
		out = append(out, got)
	}
	return out
}

// messagesArray is the raw messages array of a forwarded body.
func messagesArray(body []byte) []byte { return []byte(gjson.GetBytes(body, "messages").Raw) }

// extends reports whether cur's messages array begins with every message
// of prev's, byte for byte: prev's context is a prefix of cur's.
func extends(prev, cur []byte) bool {
	p, c := messagesArray(prev), messagesArray(cur)
	p = p[:len(p)-1] // without "]"
	return len(c) > len(p) && bytes.HasPrefix(c, p) && (c[len(p)] == ',' || c[len(p)] == ']')
}

// TestOneTaskAppendOnlyGolden: over several turns of one task, rcm mode
// forwards append-only contexts (each call's messages begin with the
// previous call's), across turns, not only within a turn; with nothing
// lost from the history it adds no record, so it forwards what router
// mode forwards.
func TestOneTaskAppendOnlyGolden(t *testing.T) {
	reqs := []string{
		"In /work/ws1 fix the crash in the ORM query compiler",
		"Also make the compiler handle empty lookups",
		"And add a regression test for the empty lookup in the compiler",
		"Also run the whole query test suite and fix what fails",
	}
	dirs := []string{"/work/ws1", "/work/ws1", "/work/ws1", "/work/ws1"}
	s := newCacheSession(reqs, dirs, func(i int) string { return fmt.Sprintf("On branch main, work of request %d", i) })
	fwd := map[string][][]byte{}
	for _, mode := range []string{"router", "rcm"} {
		rec := &recorder{}
		srv, _ := setup(t, rec, nil)
		fwd[mode] = s.send(t, srv, rec, "ses_onetask", mode)
	}
	for k, body := range fwd["rcm"] {
		if k > 0 && !extends(fwd["rcm"][k-1], body) {
			t.Errorf("call %d (turn %d) does not extend call %d:\n%s\n%s", k, s.turn[k], k-1,
				messagesArray(fwd["rcm"][k-1]), messagesArray(body))
		}
		if !bytes.Equal(body, fwd["router"][k]) {
			t.Errorf("call %d: rcm forwarded other bytes than router in a one-task session", k)
		}
		if bytes.Contains(body, []byte("rcm-task-state")) {
			t.Errorf("call %d: a record in a one-task session whose history is whole", k)
		}
	}
	checkGolden(t, "forwarded_rcm_onetask.golden", fwd["rcm"])
}

// TestSwitchRecordStays: in a session that switches tasks, the record of
// the returning task goes before the request that returns to it and stays
// there, byte for byte, for the rest of the session; the calls of a run of
// one task are append-only across its turns, and a return after another
// switch starts its new prefix only at the new record.
func TestSwitchRecordStays(t *testing.T) {
	reqs := []string{
		"In /work/ws1 fix the crash in the ORM query compiler; keep the public API unchanged",
		"In /work/ws2 add a regression test for the URL validator",
		"Back to /work/ws1: also handle empty lookups in the compiler",
		"In /work/ws1 also make the empty lookup in the compiler return an empty queryset",
		"In /work/ws2 also cover IPv6 hosts in the validator test",
		"Back to /work/ws1: document the empty lookup behaviour",
	}
	dirs := []string{"/work/ws1", "/work/ws2", "/work/ws1", "/work/ws1", "/work/ws2", "/work/ws1"}
	s := newCacheSession(reqs, dirs, func(i int) string { return fmt.Sprintf("On branch main, work of request %d", i) })
	rec := &recorder{}
	srv, _ := setup(t, rec, nil)
	fwd := s.send(t, srv, rec, "ses_switchstay", "rcm")
	records := func(body []byte) []int { // indexes of record messages
		var at []int
		for i, m := range chattest.Messages(body) {
			if strings.Contains(gjson.Get(m, "content").String(), "<rcm-task-state") {
				at = append(at, i)
			}
		}
		return at
	}
	first := 4 // the first call of turn 2, the first return to ws1
	for k := range fwd {
		got := records(fwd[k])
		switch turn := s.turn[k]; {
		case turn == 0:
			if len(got) != 0 {
				t.Errorf("call %d: records at %v in a one-task context", k, got)
			}
		case turn == 1: // a new task: a record with the brief of the first
			if len(got) != 1 || got[0] != indexOf(fwd[k], reqs[1])-1 || !briefs(gjson.Get(chattest.Messages(fwd[k])[got[0]], "content").String(), reqs[0]) {
				t.Errorf("call %d: records at %v, want the new task's with the brief of the first, before its request", k, got)
			}
		case turn == 2 || turn == 3:
			if len(got) != 1 || got[0] != indexOf(fwd[k], reqs[2])-1 {
				t.Errorf("call %d: records at %v, want one right before the return's request", k, got)
			}
			if k > first && !extends(fwd[k-1], fwd[k]) {
				t.Errorf("call %d (turn %d) does not extend call %d", k, turn, k-1)
			}
		case turn == 4: // ws2 returns: its first run's record, and its own before its request
			if len(got) != 2 || got[0] != indexOf(fwd[k], reqs[1])-1 || got[1] != indexOf(fwd[k], reqs[4])-1 || !strings.Contains(chattest.Messages(fwd[k])[got[1]], "/work/ws2") {
				t.Errorf("call %d (ws2): records at %v", k, got)
			}
		case turn == 5:
			if len(got) != 2 || got[1] != indexOf(fwd[k], reqs[5])-1 {
				t.Errorf("call %d: records at %v, want the first return's and one before this request", k, got)
			}
			if !extends(fwd[7], fwd[k]) { // the last call of ws1's previous run
				t.Errorf("call %d does not extend the task's previous run", k)
			}
		}
	}
	// The second record holds what the run before it added.
	last := fwd[len(fwd)-1]
	if at := records(last); len(at) == 2 {
		if rec2 := gjson.Get(chattest.Messages(last)[at[1]], "content").String(); !strings.Contains(rec2, reqs[3]) {
			t.Errorf("the second record lacks the previous run's request:\n%s", rec2)
		}
	}
}

// indexOf is the index of the message whose text is text, or -1.
func indexOf(body []byte, text string) int {
	for i, m := range chattest.Messages(body) {
		if gjson.Get(m, "content").String() == text {
			return i
		}
	}
	return -1
}

// TestBudgetStablePrefix: over --context-tokens, successive calls of one
// task keep a stable prefix: the cut moves in steps, not on every call,
// every call stays within budget, and once turns are dropped the record
// stands before the first kept turn, holding the dropped requests.
func TestBudgetStablePrefix(t *testing.T) {
	const turns = 36
	budget := len(chattest.OpenCodeBody(t))/4 + 6000 // OpenCode's prompt and tools, and 6000 tokens of history
	var reqs, dirs []string
	for i := range turns {
		reqs = append(reqs, fmt.Sprintf("In /work/ws1 step %d: fix case %d of the query compiler", i, i))
		dirs = append(dirs, "/work/ws1")
	}
	out := func(i int) string { return strings.Repeat(fmt.Sprintf("test %d passed\n", i), 70) } // ~1 KB, never condensed
	s := newCacheSession(reqs, dirs, out)
	rec := &recorder{}
	srv, _ := setup(t, rec, func(c *Config) { c.ContextTokens = budget })
	fwd := s.send(t, srv, rec, "ses_budgetstable", "rcm")
	moves, cut := 0, 0
	for k, body := range fwd {
		if len(body) > budget*4 {
			t.Errorf("call %d: %d bytes over a budget of %d tokens", k, len(body), budget)
		}
		if indexOf(body, reqs[0]) >= 0 {
			continue // nothing dropped yet
		}
		cut++
		msgs := chattest.Messages(body)
		if mem := gjson.Get(msgs[1], "content").String(); !strings.HasPrefix(mem, "<rcm-task-state") || !strings.Contains(mem, reqs[0]) {
			t.Errorf("call %d: turns dropped and no record with the first request after the system prompt:\n%.300s", k, mem)
		}
		if !extends(fwd[k-1], body) {
			moves++
		}
	}
	if cut < 10 || moves == 0 || moves > cut/4 {
		t.Errorf("the cut moved on %d of %d calls with dropped turns, want a few steps", moves, cut)
	}
}

// TestFallenBackRunGetsRecord: a return whose turn fell back (its calls
// went out whole) gets the task's record on the run's first routed call,
// before the return's request, and keeps it there: later calls extend it.
func TestFallenBackRunGetsRecord(t *testing.T) {
	reqs := []string{
		"In /work/ws1 fix the crash in the ORM query compiler; keep the public API unchanged",
		"In /work/ws2 add a regression test for the URL validator",
		"Back to /work/ws1: also handle empty lookups in the compiler",
		"In /work/ws1 also make the empty lookup return an empty queryset",
	}
	dirs := []string{"/work/ws1", "/work/ws2", "/work/ws1", "/work/ws1"}
	s := newCacheSession(reqs, dirs, func(i int) string { return fmt.Sprintf("On branch main, work of request %d", i) })
	rec := &recorder{}
	srv, _ := setup(t, rec, nil)
	var fwd [][]byte
	for k, n := range s.calls {
		hdr := http.Header{"X-Session-Id": {"ses_fellback"}, "X-Rcm-Mode": {"rcm"}, "X-Rcm-Threshold": {"0.6"}}
		if s.turn[k] == 2 {
			hdr.Set("X-Rcm-Threshold", "1") // the return falls back
		}
		resp := post(t, srv.URL+"/v1/chat/completions", chattest.OpenCodeBody(t, s.msgs[:n]...), hdr)
		io.Copy(io.Discard, resp.Body)
		if fb := resp.Header.Get(HeaderFallback); (fb != FallbackNone) != (s.turn[k] == 2) {
			t.Fatalf("call %d (turn %d): fallback %q", k, s.turn[k], fb)
		}
		got, _ := rec.last(t)
		fwd = append(fwd, got)
	}
	for k := range fwd {
		if s.turn[k] != 3 {
			continue
		}
		ms := chattest.Messages(fwd[k])
		at := indexOf(fwd[k], reqs[2]) - 1
		if at < 0 || !strings.HasPrefix(gjson.Get(ms[at], "content").String(), `<rcm-task-state task="t1">`) || strings.Contains(chattest.OutsideRecords(string(fwd[k])), "/work/ws2") {
			t.Fatalf("call %d: no record before the fallen-back return, or the other task's turns kept:\n%s", k, strings.Join(ms, "\n"))
		}
		if k > 0 && s.turn[k-1] == 3 && !extends(fwd[k-1], fwd[k]) {
			t.Errorf("call %d does not extend call %d", k, k-1)
		}
	}
}
