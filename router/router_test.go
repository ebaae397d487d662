package router

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/transcript"
)

func mustNew(t testing.TB, cfg Config) *Router {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// turn is a request and the bash commands that answer it.
func turn(req string, cmds ...string) []chat.Message {
	ms := []chat.Message{chattest.User(req)}
	for k, c := range cmds {
		id := "call_" + string(rune('a'+k))
		ms = append(ms, chattest.ToolCall(id, "bash", map[string]string{"command": c}), chattest.ToolResult(id, "ok"))
	}
	if len(cmds) > 0 {
		ms = append(ms, chattest.Assistant("Done."))
	}
	return ms
}

func transcriptOf(t testing.TB, turns ...[]chat.Message) *transcript.Transcript {
	ms := []chat.Message{chattest.System("You are a coding agent.")}
	for _, tn := range turns {
		ms = append(ms, tn...)
	}
	return chattest.Parse(t, chattest.Body(ms...))
}

// threeTasks: two tasks in their checkouts, then a third turn under test.
func threeTasks(t testing.TB, last []chat.Message) *transcript.Transcript {
	return transcriptOf(t,
		turn("Fix the date parsing bug in /work/ws1: parse_http_date treats two-digit years wrong.",
			"cd /work/ws1 && grep -n parse_http_date django/utils/http.py"),
		turn("In /work/ws2 the admin changelist crashes on ordering by a related field; fix it.",
			"cd /work/ws2 && grep -rn get_ordering django/contrib/admin/views/main.py"),
		last)
}

func route(t testing.TB, r *Router, tr *transcript.Transcript, prior []Prior, opt Options) Plan {
	t.Helper()
	p, err := r.Route(context.Background(), tr, prior, opt)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRouteSignals(t *testing.T) {
	for _, c := range []struct {
		name     string
		last     []chat.Message
		opt      Options
		task     string
		method   string
		fallback bool
		keep     []int
	}{
		{"workspace named", turn("Back in /work/ws1: also handle four-digit years."), Options{}, "t1", MethodWorkspace, false, []int{0, 2}},
		{"workspace as workdir", []chat.Message{chattest.User("Now run the tests."), chattest.ToolCall("x", "bash", map[string]string{"command": "ls", "workdir": "/work/ws2"})}, Options{}, "t2", MethodWorkspace, false, []int{1, 2}},
		{"cd in a tool call", turn("Run the full test module please and tell me what fails.", "cd /work/ws1 && python -m pytest"), Options{}, "t1", MethodWorkspace, false, []int{0, 2}},
		{"read filePath", []chat.Message{chattest.User("Show me the changelist code again."), chattest.ToolCall("x", "read", map[string]string{"filePath": "/work/ws2/django/contrib/admin/views/main.py"})}, Options{}, "t2", MethodWorkspace, false, []int{1, 2}},
		{"new checkout", turn("A new issue in /work/ws3: QuerySet.none() on combined queries returns everything."), Options{}, "t3", MethodWorkspace, false, []int{2}},
		{"written tag", turn("[task: Auth-Fix] add a regression test for the validators"), Options{}, "auth-fix", MethodTag, false, []int{2}},
		{"header tag wins", turn("[task: other] add a test"), Options{Task: "t1"}, "t1", MethodTag, false, []int{0, 2}},
		{"follow-up", turn("yes please"), Options{}, "t2", MethodScored, false, []int{1, 2}},
		{"slash command", turn("/review"), Options{}, "t2", MethodFollowUp, false, []int{1, 2}},
		{"files", turn("Can you open django/contrib/admin/views/main.py again and check it?"), Options{}, "t2", MethodScored, false, []int{1, 2}},
		{"lexical falls back on its guess", turn("The parse_http_date two-digit years logic should follow RFC 7231 and compare with the current year."), Options{}, "t1", MethodScored, true, []int{0, 1, 2}},
		{"ambiguous falls back", turn("Please write a short summary of everything you changed today for the changelog."), Options{}, "", "", true, []int{0, 1, 2}},
		{"threshold override", turn("Back in /work/ws1: also handle four-digit years."), Options{Threshold: 1}, "t1", MethodWorkspace, true, []int{0, 1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := route(t, mustNew(t, Config{}), threeTasks(t, c.last), nil, c.opt)
			if c.task != "" && (p.Current.Task != c.task || p.Current.Method != c.method) {
				t.Errorf("decision %+v, want %s by %s", p.Current, c.task, c.method)
			}
			if p.Fallback != c.fallback || !slices.Equal(p.Keep, c.keep) {
				t.Errorf("fallback %v keep %v, want %v %v (%+v)", p.Fallback, p.Keep, c.fallback, c.keep, p.Current)
			}
			if p.Fallback != (p.Current.Confidence < max(c.opt.Threshold, DefaultThreshold)) || p.Current.Routed == p.Fallback {
				t.Errorf("fallback %v inconsistent with %+v", p.Fallback, p.Current)
			}
		})
	}
}

func TestRoutePriorAndRelabel(t *testing.T) {
	r := mustNew(t, Config{})
	// Earlier routed labels stay even when the signals say otherwise.
	tr := threeTasks(t, turn("yes please"))
	prior := []Prior{{Known: true, Task: "alpha", Confidence: 0.9, Routed: true}, {Known: true, Task: "alpha", Confidence: 0.85, Routed: true}}
	p := route(t, r, tr, prior, Options{})
	if p.Turns[0].Task != "alpha" || p.Turns[1].Method != MethodPrior || p.Current.Task != "alpha" {
		t.Fatalf("prior labels not kept: %+v", p.Turns)
	}
	// The current turn routed before keeps its label.
	prior = append(prior, Prior{Known: true, Task: "beta", Confidence: 0.81, Routed: true})
	if p = route(t, r, tr, prior, Options{}); p.Current.Task != "beta" || p.Current.Method != MethodPrior {
		t.Fatalf("routed current turn relabelled: %+v", p.Current)
	}
	// A fallback current turn is relabelled once its tool calls show the checkout.
	tr = threeTasks(t, turn("Please write a short summary of everything you changed today for the changelog."))
	p = route(t, r, tr, nil, Options{})
	if !p.Fallback {
		t.Fatalf("want a fallback first: %+v", p.Current)
	}
	prior = []Prior{p.Turns[0].prior(), p.Turns[1].prior(), p.Turns[2].prior()}
	tr = threeTasks(t, turn("Please write a short summary of everything you changed today for the changelog.", "cd /work/ws2 && git diff"))
	if p = route(t, r, tr, prior, Options{}); p.Fallback || p.Current.Task != "t2" || p.Current.Method != MethodWorkspace {
		t.Fatalf("fallback turn not relabelled: %+v", p.Current)
	}
	// An earlier fallback turn keeps its guess and is always kept.
	tr = transcriptOf(t,
		turn("Fix the date parsing bug in /work/ws1.", "cd /work/ws1 && ls"),
		turn("In /work/ws2 fix the admin crash.", "cd /work/ws2 && ls"),
		turn("Please write a short summary of everything you changed today.", "cd /work/ws2 && git diff"),
		turn("Back in /work/ws1: add the test."))
	prior = []Prior{{Known: true, Task: "t1", Confidence: 1, Routed: true}, {Known: true, Task: "t2", Confidence: 0.95, Routed: true}, {Known: true, Task: "t2", Confidence: 0.5}}
	p = route(t, r, tr, prior, Options{})
	if p.Turns[2].Task != "t2" || p.Turns[2].Routed || !slices.Equal(p.Keep, []int{0, 2, 3}) {
		t.Fatalf("earlier fallback turn: %+v keep %v", p.Turns[2], p.Keep)
	}
}

func TestRouteColdHistoryAndIDs(t *testing.T) {
	r := mustNew(t, Config{})
	tr := threeTasks(t, turn("A new issue in /work/ws3: the none() bug."))
	p := route(t, r, tr, nil, Options{})
	got := []string{p.Turns[0].Task, p.Turns[1].Task, p.Turns[2].Task}
	if !slices.Equal(got, []string{"t1", "t2", "t3"}) || p.Turns[0].Method != MethodNew {
		t.Fatalf("ids %v", got)
	}
	// Ids known to the session are never reused.
	if p = route(t, r, tr, nil, Options{Tasks: []string{"t7", "auth"}}); p.Turns[0].Task != "t8" {
		t.Fatalf("new id after t7: %+v", p.Turns[0])
	}
}

func TestRouteSummaryKept(t *testing.T) {
	tr := transcriptOf(t,
		[]chat.Message{chattest.User("What did we do so far?"), {Role: "assistant", Content: "We fixed the date bug in /work/ws1 and started the admin crash in /work/ws2."}},
		turn("Fix the date parsing bug in /work/ws1.", "cd /work/ws1 && ls"),
		turn("In /work/ws2 fix the admin crash.", "cd /work/ws2 && ls"),
		turn("Back in /work/ws1: add the test."))
	if tr.Turns[0].Kind != transcript.Summary {
		t.Fatal("fixture: first turn is not a summary")
	}
	p := route(t, mustNew(t, Config{}), tr, nil, Options{})
	if p.Turns[0].Method != MethodSummary || p.Current.Task != "t1" || !slices.Equal(p.Keep, []int{0, 1, 3}) {
		t.Fatalf("summary: %+v keep %v", p.Turns, p.Keep)
	}
}

func TestRouteErrors(t *testing.T) {
	r := mustNew(t, Config{})
	ctx := context.Background()
	if _, err := r.Route(ctx, nil, nil, Options{}); !errors.Is(err, ErrNoTurn) {
		t.Errorf("nil transcript: %v", err)
	}
	body := chattest.Body(chattest.System("You are a title generator. You output ONLY a thread title."), chattest.User("hello"))
	if _, err := r.Route(ctx, chattest.Parse(t, body), nil, Options{}); !errors.Is(err, ErrSideCall) {
		t.Errorf("title call: %v", err)
	}
	tr := transcriptOf(t, turn("hello"))
	if _, err := r.Route(ctx, tr, make([]Prior, 2), Options{}); err == nil {
		t.Error("too many priors accepted")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{Threshold: 0.5, Model: "m", BaseURL: "http://127.0.0.1:1/v1", Timeout: 1}, true},
		{Config{Threshold: 1.5}, false},
		{Config{Threshold: -0.1}, false},
		{Config{Timeout: -1}, false},
		{Config{Model: "m", BaseURL: "ftp://x"}, false},
		{Config{Model: "m", BaseURL: "::"}, false},
		{Config{APIKey: "k"}, false},
	} {
		if err := c.cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: %v", c.cfg, err)
		}
	}
	if r := mustNew(t, Config{}); r.cfg.Threshold != DefaultThreshold {
		t.Errorf("default threshold %v", r.cfg.Threshold)
	}
}

// TestSeedsAfterCompaction: once compaction has removed a task's turns, a
// request returning to its checkout is routed to it from its seed (its
// record), not to a new task.
func TestSeedsAfterCompaction(t *testing.T) {
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	tr := chattest.Parse(t, chattest.Body(chattest.System("You are opencode.\n<env>\n  Working directory: /work\n  Is directory a git repo: no\n</env>"),
		chattest.User("What did we do so far?"),
		chattest.Assistant("## Task t1\n- ORM fix\n## Task t2\n- validator test"),
		chattest.User("Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."),
		chattest.User("Back in /work/ws1: also handle empty lookups in the compiler")))
	opt := Options{Tasks: []string{"t1", "t2"}}
	p, err := r.Route(context.Background(), tr, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	if p.Current.Task == "t1" {
		t.Fatalf("without seeds the router cannot know t1's checkout: %+v", p.Current)
	}
	opt.Seeds = map[string]string{
		"t1": "/work/ws1\nFix the crash in the ORM query compiler",
		"t2": "/work/ws2\nAdd a regression test for the URL validator",
	}
	p, err = r.Route(context.Background(), tr, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	if p.Current.Task != "t1" || p.Fallback || p.Current.Method != MethodWorkspace {
		t.Fatalf("with seeds: %+v fallback=%v", p.Current, p.Fallback)
	}
}

// TestLastAfterCompaction: the request after a compaction's summary
// continues the task the session was in when it compacted (Options.Last),
// which the history no longer shows. The coefficients make continuing
// sure and anything else unlikely, so only a continue candidate routes.
func TestLastAfterCompaction(t *testing.T) {
	var c Coefficients
	c.Continue[fBias], c.Return[fBias], c.New[fBias] = 20, -20, -20
	r := mustNew(t, Config{Coefficients: &c})
	tr := chattest.Parse(t, chattest.Body(chattest.System("You are opencode.\n<env>\n  Working directory: /work/shop\n  Is directory a git repo: yes\n</env>"),
		chattest.User("What did we do so far?"),
		chattest.Assistant("We added the health endpoint, then started the checkout flow."),
		chattest.User("did you push?")))
	opt := Options{Tasks: []string{"t1", "t2"}, Seeds: map[string]string{"t1": "Add a /health endpoint", "t2": "Build a checkout flow"}}
	p := route(t, r, tr, nil, opt)
	if !p.Fallback {
		t.Fatalf("without the session's latest task nothing continues: %+v", p.Current)
	}
	opt.Last = "t2"
	p = route(t, r, tr, nil, opt)
	if p.Fallback || p.Current.Task != "t2" || p.Current.Method != MethodScored {
		t.Fatalf("after the summary: %+v fallback=%v, want t2 continued", p.Current, p.Fallback)
	}
}

// TestNewTaskAbsorbsFallbacks: a task opened at a turn takes along the
// turns just before it that fell back, and not those routed before them.
func TestNewTaskAbsorbsFallbacks(t *testing.T) {
	var c Coefficients
	c.Continue[fBias], c.Return[fBias], c.New[fBias] = -20, -20, 20
	r := mustNew(t, Config{Coefficients: &c})
	tr := transcriptOf(t, turn("Fix the login bug.", "ls"), turn("it is in auth.py", "cat auth.py"), turn("and add a test"))
	prior := []Prior{
		{Known: true, Task: "t1", Confidence: 1, Method: MethodNew, Routed: true},
		{Known: true, Task: "t1", Confidence: 0.5, Method: MethodScored},
	}
	p := route(t, r, tr, prior, Options{})
	if p.Current.Task != "t2" || p.Current.Method != MethodNew || p.Fallback {
		t.Fatalf("current %+v", p.Current)
	}
	if d := p.Turns[1]; d.Task != "t2" || !d.Routed {
		t.Fatalf("the fallen-back turn before it: %+v, want t2 routed", d)
	}
	if d := p.Turns[0]; d.Task != "t1" {
		t.Fatalf("the routed turn: %+v, want t1", d)
	}
	if !slices.Equal(p.Keep, []int{1, 2}) {
		t.Fatalf("keep %v, want [1 2]", p.Keep)
	}
}
