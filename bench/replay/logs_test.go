package replay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/bench/chatlog"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/tidwall/gjson"
)

// TestLogMeasure: a labelled session of four requests (a task, a second
// one needing it, a return, a short continue) and hand-made observations
// of a router that detects the new task, routes the return right, and
// splits the continue off with nothing but its own request.
func TestLogMeasure(t *testing.T) {
	s := &chatlog.Session{Name: "x", Workdir: "/home/user/x",
		Turns: []chat.Turn{
			{Request: "build the parser", Messages: []chat.Message{chattest.Assistant("ok 0")}},
			{Request: "write the docs for it", Messages: []chat.Message{chattest.Assistant("ok 1")}},
			{Request: "back to the parser: handle tabs", Messages: []chat.Message{chattest.Assistant("ok 2")}},
			{Request: "yes", Messages: []chat.Message{chattest.Assistant("ok 3")}},
		},
		Labels: []chatlog.Label{
			{Task: "T1", Kind: chatlog.KindNew},
			{Task: "T2", Kind: chatlog.KindNew, Needs: []string{"T1"}},
			{Task: "T1", Kind: chatlog.KindReturn, Needs: []string{"T1"}},
			{Task: "T1", Kind: chatlog.KindContinue, Needs: []string{"T1"}},
		}}
	p, err := newLogPlan(s, APIChat)
	if err != nil {
		t.Fatal(err)
	}
	if sys := string(p.messages[0]); !strings.Contains(sys, "Working directory: /home/user/x\\n") || !strings.Contains(sys, "Is directory a git repo: yes") {
		t.Errorf("system prompt %.300s", sys)
	}
	// History: 0 system, then per turn i its request at 1+2i, its reply at 2+2i.
	if len(p.calls) != 4 || !slices.Equal(p.turn, []int{-1, 0, 0, 1, 1, 2, 2, 3}) || p.request(2) != 5 {
		t.Fatalf("%d calls, turns %v", len(p.calls), p.turn)
	}
	obs := func(turn int, task string, fwd ...int) logObs {
		o := logObs{turn: turn, first: true, task: task, conf: 0.9, fallback: "none", sent: 100, fwd: 10 * len(fwd), present: map[string]int{}}
		for _, h := range fwd {
			o.present[p.keys[h]]++
			if m := p.calls[3].Messages[h]; m.Role == chat.RoleUser {
				o.texts = append(o.texts, m.Content)
			}
		}
		return o
	}
	got := []logObs{
		obs(0, "t1", 0, 1),
		obs(1, "t2", 0, 1, 2, 3),
		obs(2, "t1", 0, 1, 2, 4, 5), // turn 1's request dropped, its reply kept
		obs(3, "t3", 0, 7),          // every earlier turn dropped
	}
	req, all, ds := p.measure(got)
	if req != all {
		t.Errorf("one call per turn: at request %+v, all %+v", req, all)
	}
	m := all.metrics()
	unneeded := 2*len(p.messages[3]) + 2*len(p.messages[4]) // turn 1 at calls 2 and 3
	dropped := len(p.messages[3]) + len(p.messages[3]) + len(p.messages[4])
	if m.Calls != 4 || m.Routed != 4 || m.NeededLost != 0.25 || m.SplitOff != 1 || m.ContinueRouted != 1 ||
		m.ReturnsRight != 1 || m.ReturnsWrong != 0 || m.NewDetected != 1 || m.NewTasks != 1 ||
		m.UnneededDropped != share(dropped, unneeded) || m.FallbackRate != 0 || m.BytesRatio != share(130, 400) {
		t.Errorf("%+v", m)
	}
	if len(ds) != 4 || !ds[0].Correct || !ds[1].Correct || !ds[2].Correct || ds[3].Correct {
		t.Errorf("decisions %+v", ds)
	}
	a := p.audit(unit{mode: "router", threshold: 0.8}, got)
	if len(a.Requests) != 4 || !slices.Equal(a.Requests[3].Dropped, []int{1, 2, 3}) || !a.Requests[3].NeededLost ||
		!slices.Equal(a.Requests[2].Dropped, []int{2}) || a.Requests[2].NeededLost || a.Requests[1].Gold != "T2 new" {
		t.Errorf("audit %+v", a.Requests)
	}
	for i, r := range a.Requests {
		if r.Calls != 1 || r.Last.Task != got[i].task || !slices.Equal(r.DroppedAny, r.Dropped) || r.LostAny != r.NeededLost {
			t.Errorf("request %d: one call, its own decision: %+v", i, r)
		}
	}
	// A fallback at the return, and the continue sent where the return
	// went: a return fallen back, nothing split off.
	got[2].fallback, got[3].task = "threshold", "t1"
	_, all, _ = p.measure(got)
	if m := all.metrics(); m.ReturnsFallback != 1 || m.Routed != 3 || m.SplitOff != 0 || m.FallbackRate != 0.25 {
		t.Errorf("%+v", m)
	}
}

// TestLogAuditLaterCalls: a request's audit row keeps its first call's
// decision and adds what its later calls (after tool calls) did: here the
// first call falls back, the second is routed to a new task and drops
// every earlier request, a needed one among them.
func TestLogAuditLaterCalls(t *testing.T) {
	s := &chatlog.Session{Name: "x", Workdir: "/home/user/x",
		Turns: []chat.Turn{
			{Request: "build the parser", Messages: []chat.Message{chattest.Assistant("ok 0")}},
			{Request: "now test it", Messages: []chat.Message{
				chattest.ToolCall("c1", "bash", map[string]string{"command": "go test ./..."}), chattest.ToolResult("c1", "ok"), chattest.Assistant("tested")}},
		},
		Labels: []chatlog.Label{{Task: "T1", Kind: chatlog.KindNew}, {Task: "T1", Kind: chatlog.KindContinue, Needs: []string{"T1"}}}}
	p, err := newLogPlan(s, APIChat)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.calls) != 3 {
		t.Fatalf("%d calls, want 3", len(p.calls))
	}
	obs := func(k, turn int, task, fallback string, fwd ...int) logObs {
		o := logObs{turn: turn, first: k != 2, task: task, conf: 0.9, fallback: fallback, present: map[string]int{}}
		for _, h := range fwd {
			o.present[p.keys[h]]++
			if m := p.calls[k].Messages[h]; m.Role == chat.RoleUser {
				o.texts = append(o.texts, m.Content)
			}
		}
		return o
	}
	// History: 0 system, 1 and 2 turn 0, 3 to 6 turn 1.
	got := []logObs{obs(0, 0, "t1", "none", 0, 1), obs(1, 1, "t1", "threshold", 0, 1, 2, 3), obs(2, 1, "t2", "none", 0, 3, 4, 5)}
	r := p.audit(unit{mode: "router", threshold: 0.8}, got).Requests
	if len(r) != 2 || r[0].Calls != 1 || r[1].Calls != 2 {
		t.Fatalf("rows %+v", r)
	}
	if x := r[1]; x.Task != "t1" || x.Fallback != "threshold" || len(x.Dropped) != 0 || x.NeededLost ||
		x.Last != (Choice{Task: "t2", Confidence: 0.9, Fallback: "none"}) || !slices.Equal(x.DroppedAny, []int{1}) || !x.LostAny {
		t.Errorf("later call not audited: %+v", x)
	}
	if x := r[0]; x.Last.Task != "t1" || len(x.DroppedAny) != 0 || x.LostAny {
		t.Errorf("one call: %+v", x)
	}
}

// TestLogCalibrationSafe: a decision counts as correct for calibration when
// it was safe, as the router's confidence claims: one router task for two
// gold tasks is wrong at the second task's first request (it is no new
// task) and right at its follow-ups (their task is the one that request
// got), though a one-to-one mapping of ids would call the first task's
// request wrong instead.
func TestLogCalibrationSafe(t *testing.T) {
	s := &chatlog.Session{Name: "x", Workdir: "/home/user/x",
		Turns: []chat.Turn{
			{Request: "build the parser", Messages: []chat.Message{chattest.Assistant("ok 0")}},
			{Request: "now a CLI for the exporter", Messages: []chat.Message{chattest.Assistant("ok 1")}},
			{Request: "add a --json flag", Messages: []chat.Message{chattest.Assistant("ok 2")}},
			{Request: "and --csv", Messages: []chat.Message{chattest.Assistant("ok 3")}},
		},
		Labels: []chatlog.Label{
			{Task: "T1", Kind: chatlog.KindNew},
			{Task: "T2", Kind: chatlog.KindNew},
			{Task: "T2", Kind: chatlog.KindContinue, Needs: []string{"T2"}},
			{Task: "T2", Kind: chatlog.KindContinue, Needs: []string{"T2"}},
		}}
	p, err := newLogPlan(s, APIChat)
	if err != nil {
		t.Fatal(err)
	}
	var got []logObs
	for turn := range 4 {
		o := logObs{turn: turn, first: true, task: "t1", conf: 0.9, fallback: "none", present: map[string]int{}}
		for h := range 2 + 2*turn {
			o.present[p.keys[h]]++
			if m := p.calls[3].Messages[h]; m.Role == chat.RoleUser {
				o.texts = append(o.texts, m.Content)
			}
		}
		got = append(got, o)
	}
	_, _, ds := p.measure(got)
	var correct []bool
	for _, d := range ds {
		correct = append(correct, d.Correct)
	}
	if !slices.Equal(correct, []bool{true, false, true, true}) {
		t.Errorf("correct %v, want [true false true true]", correct)
	}
	// The follow-up that loses its task's first request is not safe.
	delete(got[3].present, p.keys[3])
	got[3].texts = slices.DeleteFunc(got[3].texts, func(s string) bool { return s == "now a CLI for the exporter" })
	if _, _, ds := p.measure(got); ds[3].Correct {
		t.Errorf("a call that lost a needed request counted correct")
	}
}

// TestLogsProxies: with Proxies each session goes to its own proxy (a
// held-out replay gives each the router fitted without it): here one of
// them answers 502, and only its session fails.
func TestLogsProxies(t *testing.T) {
	opts, _ := replayRig(t)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"boom"}}`, http.StatusBadGateway)
	}))
	defer bad.Close()
	sess := func(name string) chatlog.Session {
		return chatlog.Session{Name: name, Workdir: "/home/user/x", Turns: []chat.Turn{
			{Request: "build the parser in /work/ws1", Messages: []chat.Message{chattest.Assistant("ok")}}}}
	}
	logs := []chatlog.Session{sess("a"), sess("b")}
	opts.Modes = []string{benchspec.ModeNative}
	for _, c := range []struct {
		proxies []string
		failed  string
	}{
		{[]string{bad.URL, opts.Proxy}, "a"},
		{[]string{opts.Proxy, bad.URL + "/"}, "b"},
	} {
		o := opts
		o.Proxies = c.proxies
		res, err := Logs(context.Background(), logs, o)
		if err == nil || res.Completed != 1 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "session "+c.failed+",") {
			t.Errorf("proxies %v: err %v, completed %d, errors %q: want session %s alone failed", c.proxies, err, res.Completed, res.Errors, c.failed)
		}
	}
}

// TestLogPlanCompacted: after a compaction (Claude Code's summary turn) a
// call sends the system prompt and the turns from the summary on, as the
// harness did; what it did not send is neither lost nor dropped by rcm.
func TestLogPlanCompacted(t *testing.T) {
	s := &chatlog.Session{Name: "c", Workdir: "/home/user/c",
		Turns: []chat.Turn{
			{Request: "add the CSV export", Messages: []chat.Message{chattest.Assistant("Added.")}},
			{Request: "This session is being continued from a previous conversation.", Rebuilt: []chat.Rebuild{{}}, Messages: []chat.Message{chattest.Assistant("Continuing.")}},
			{Request: "now sort it by date", Messages: []chat.Message{chattest.Assistant("Sorted.")}},
		},
		Labels: []chatlog.Label{
			{Task: "T1", Kind: chatlog.KindNew},
			{Task: "T1", Kind: chatlog.KindMeta},
			{Task: "T1", Kind: chatlog.KindContinue, Needs: []string{"T1"}},
		}}
	p, err := newLogPlan(s, APIChat)
	if err != nil {
		t.Fatal(err)
	}
	// The whole history: 0 system, 1 and 2 turn 0, 3 and 4 the summary, 5
	// turn 2's request.
	if len(p.messages) != 6 || p.end(0) != 2 || p.end(1) != 4 || p.end(2) != 6 || p.calls[2].From != 3 {
		t.Fatalf("%d messages, ends %d %d %d", len(p.messages), p.end(0), p.end(1), p.end(2))
	}
	parts := newBodyParts("m", APIChat)
	var sent []string
	for k, c := range p.calls {
		b := parts.body(p.messages, c.From, p.end(k))
		var contents []string
		for _, m := range gjson.GetBytes(append(append([]byte{}, b[0]...), b[1]...), "messages").Array() {
			c := m.Get("content").Str
			if m.Get("role").Str == chat.RoleSystem {
				c = "" // OpenCode's prompt
			}
			contents = append(contents, m.Get("role").Str+":"+c)
		}
		sent = append(sent, strings.Join(contents, ","))
	}
	summary := s.Turns[1].Request
	want := []string{"system:,user:add the CSV export",
		"system:,user:" + summary,
		"system:,user:" + summary + ",assistant:Continuing.,user:now sort it by date"}
	if strings.Join(sent, "|") != strings.Join(want, "|") {
		t.Errorf("bodies\n%s\nwant\n%s", strings.Join(sent, "\n"), strings.Join(want, "\n"))
	}
	// The last call forwarded all it sent: turn 0, which it did not send,
	// is neither lost (though its task is needed) nor dropped.
	o := logObs{turn: 2, first: true, task: "t1", conf: 0.9, fallback: "none", present: map[string]int{}}
	for i, h := range []int{0, 3, 4, 5} { // the call's messages in the whole history
		o.present[p.keys[h]]++
		if m := p.calls[2].Messages[i]; m.Role == chat.RoleUser {
			o.texts = append(o.texts, m.Content)
		}
	}
	if p.lost(2, &o) {
		t.Error("the request before the compaction counts as lost")
	}
	obs := []logObs{{turn: 0, first: true, task: "t1", conf: 1, fallback: "none", present: map[string]int{p.keys[0]: 1, p.keys[1]: 1}, texts: []string{"add the CSV export"}},
		{turn: 1, first: true, task: "t1", conf: 1, fallback: "none", present: map[string]int{p.keys[0]: 1, p.keys[3]: 1}}, o}
	if r := p.audit(unit{mode: "router", threshold: 0.8}, obs).Requests; len(r[2].Dropped) != 0 || r[2].NeededLost {
		t.Errorf("audit %+v", r[2])
	}
	if _, all, _ := p.measure(obs); all.lost != 0 || all.unneeded != 0 {
		t.Errorf("%+v", all)
	}
}

// TestLogPlanRebuilt: after Codex compacts inside a turn, its calls send
// the person's earlier requests again and the summary; a request needed
// there is lost when rcm drops its copy, and the copies count as the
// bytes of their own turns (the summary as no turn's).
func TestLogPlanRebuilt(t *testing.T) {
	summary := chattest.User("Another language model started to solve this problem... The export is done.")
	s := &chatlog.Session{Name: "x", Workdir: "/home/user/x",
		Turns: []chat.Turn{
			{Request: "add the CSV export", Messages: []chat.Message{chattest.Assistant("Added.")}},
			{Request: "fix the login redirect", Messages: []chat.Message{chattest.ToolCall("c1", "bash", "{}"), chattest.ToolResult("c1", "ok"), chattest.Assistant("Fixed.")},
				Rebuilt: []chat.Rebuild{{At: 2, History: []chat.Message{chattest.User("add the CSV export"), chattest.User("fix the login redirect"), summary}}}},
			{Request: "back to the export: sort it by date", Messages: []chat.Message{chattest.Assistant("Sorted.")}},
		},
		Labels: []chatlog.Label{
			{Task: "T1", Kind: chatlog.KindNew},
			{Task: "T2", Kind: chatlog.KindNew},
			{Task: "T1", Kind: chatlog.KindReturn, Needs: []string{"T1"}},
		}}
	p, err := newLogPlan(s, APIChat)
	if err != nil {
		t.Fatal(err)
	}
	// 0 system; 1, 2 turn 0; 3, 4 turn 1's request and call; 5, 6, 7 the
	// rebuilt history; 8, 9 turn 1's result and answer; 10 turn 2's request.
	if !slices.Equal(p.turn, []int{-1, 0, 0, 1, 1, 0, 1, -1, 1, 1, 2}) || p.calls[3].From != 5 || !slices.Equal(p.copies[0], []int{5}) {
		t.Fatalf("turns %v, last call from %d, copies %v", p.turn, p.calls[3].From, p.copies)
	}
	last := len(p.calls) - 1
	obs := func(hs ...int) logObs {
		o := logObs{turn: 2, first: true, task: "t1", conf: 0.9, fallback: "none", present: map[string]int{}}
		o.present[p.keys[0]]++
		for _, h := range hs {
			o.present[p.keys[h]]++
			if m := p.calls[last].Messages[h-p.calls[last].From+1]; m.Role == chat.RoleUser {
				o.texts = append(o.texts, m.Content)
			}
		}
		return o
	}
	whole, dropped := obs(5, 6, 7, 8, 9, 10), obs(7, 8, 9, 10)
	if p.lost(last, &whole) || !p.lost(last, &dropped) {
		t.Errorf("lost: %v with the copy forwarded, %v without it", p.lost(last, &whole), p.lost(last, &dropped))
	}
	firsts := []logObs{{turn: 0, first: true, task: "t1", conf: 1, fallback: "none", present: map[string]int{p.keys[0]: 1, p.keys[1]: 1}, texts: []string{"add the CSV export"}},
		{turn: 1, first: true, task: "t2", conf: 1, fallback: "none", present: map[string]int{p.keys[0]: 1, p.keys[3]: 1}, texts: []string{"fix the login redirect"}},
		{turn: 1, task: "t2", conf: 1, fallback: "none", present: map[string]int{p.keys[0]: 1, p.keys[7]: 1, p.keys[9]: 1}}}
	if r := p.audit(unit{mode: "router", threshold: 0.8}, append(firsts, dropped)).Requests; !slices.Equal(r[2].Dropped, []int{1, 2}) || !r[2].NeededLost {
		t.Errorf("audit %+v", r[2])
	}
	// Unneeded: turn 0 at turn 1's calls (1 and 2, then its copy 5);
	// at the return, turn 1's copy 6 and its messages 8 and 9, which it
	// kept. The summary (7) is no turn's.
	n := func(hs ...int) (b int) {
		for _, h := range hs {
			b += len(p.messages[h])
		}
		return b
	}
	if _, all, _ := p.measure(append(firsts, dropped)); all.unneeded != n(1, 2, 5, 6, 8, 9) || all.dropped != n(1, 2, 5, 6) {
		t.Errorf("unneeded %d, dropped %d, want %d and %d", all.unneeded, all.dropped, n(1, 2, 5, 6, 8, 9), n(1, 2, 5, 6))
	}
}
