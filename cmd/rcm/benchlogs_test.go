package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// logResults is the part of a replay of real sessions' results.json the
// tests read.
type logResults struct {
	Sessions, Labelled, Completed int
	Skipped                       []struct{ Source, Record, Reason string }
	Summaries                     []struct {
		Mode      string
		Threshold float64
		Sessions  int
		AtRequest logMetrics `json:"at_request"`
		All       logMetrics `json:"all_calls"`
	}
	Audit []struct {
		Session  string
		Mode     string
		Requests []struct {
			Turn       int
			Task       string
			Confidence float64
			Method     string
			Fallback   string
			Dropped    []int
			NeededLost bool `json:"needed_lost"`
			Calls      int
			Last       struct{ Task, Fallback string }
		}
	}
}

type logMetrics struct {
	Calls, Routed    int
	NeededLost       *float64 `json:"needed_lost"`
	SplitOff         *float64 `json:"continue_split_off"`
	ContinueRouted   int      `json:"continue_routed"`
	BytesRatio       *float64 `json:"bytes_ratio"`
	NeededLostRouted *float64 `json:"needed_lost_routed"`
	ReturnsWrong     int      `json:"returns_wrong"`
}

// writeCorpus lays files (raw/NNN.md, labels/NNN.json, ...) out as a
// corpus folder and returns it.
func writeCorpus(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"raw", "labels"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func replayLogsFor(t *testing.T, sessions string, args ...string) logResults {
	r, _, _ := replayLogsOut(t, sessions, args...)
	return r
}

// replayLogsOut replays like replayLogsFor and also returns what the
// command printed and report.md.
func replayLogsOut(t *testing.T, sessions string, args ...string) (logResults, string, string) {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := filepath.Join(dir, "out")
	args = append([]string{"--sessions", sessions, "--out", out}, args...)
	if err := benchReplay(context.Background(), args, f, f); err != nil {
		b, _ := os.ReadFile(f.Name())
		t.Fatalf("%v\n%s", err, b)
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r logResults
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	printed, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return r, string(printed), string(md)
}

// TestBenchReplaySessions replays testdata/real-sessions (69 logs, 78
// conversations: aider's /clear and /reset start one) through a real
// rcm: native keeps every needed message, every request is measured and
// audited in router mode with the router's own methods.
func TestBenchReplaySessions(t *testing.T) {
	r := replayLogsFor(t, "../../testdata/real-sessions", "--modes", "native,router", "--thresholds", "0.8")
	if r.Sessions != 78 || r.Labelled != 78 || r.Completed != 78 || len(r.Summaries) != 2 {
		t.Fatalf("%d sessions, %d labelled, %d completed, %d summaries", r.Sessions, r.Labelled, r.Completed, len(r.Summaries))
	}
	native, router := r.Summaries[0], r.Summaries[1]
	if native.Mode != "native" || *native.AtRequest.NeededLost != 0 || *native.All.NeededLost != 0 || *native.All.BytesRatio != 1 || native.All.Routed != 0 {
		t.Errorf("native: %+v", native)
	}
	if router.AtRequest.Calls != 1393 || native.AtRequest.Calls != 1393 || router.All.Calls <= 1393 || router.AtRequest.Routed == 0 || router.AtRequest.NeededLostRouted == nil {
		t.Errorf("router: %+v", router)
	}
	// The bars of issue 24, on the sessions the committed coefficients
	// were fitted on (in-sample: the held-out figures are rcm bench fit's
	// report); a refit or a router change that breaks them fails here.
	for _, m := range []logMetrics{router.AtRequest, router.All} {
		if *m.NeededLost > 0.02 || *m.SplitOff > 0.05 || m.ReturnsWrong != 0 {
			t.Errorf("router at 0.8 on the corpus: needed lost %.3f, continue split off %.3f, %d returns routed wrong", *m.NeededLost, *m.SplitOff, m.ReturnsWrong)
		}
	}
	requests, methods := 0, 0
	for _, a := range r.Audit {
		requests += len(a.Requests)
		for _, q := range a.Requests {
			if q.Method != "" {
				methods++
			}
		}
	}
	if len(r.Audit) != 78 || requests != 1393 || methods != 1393 {
		t.Errorf("audit: %d sessions, %d requests, %d with a method", len(r.Audit), requests, methods)
	}
}

// TestBenchReplaySessionsLoss: a hand-labelled session whose second
// request, tagged as a task of its own, continues (and needs) the first:
// router mode splits it off and loses the first request, native does not;
// an unlabelled Claude Code log beside it is audited, not measured. In
// each API.
func TestBenchReplaySessionsLoss(t *testing.T) {
	files := map[string]string{
		"raw/001.md": "# aider chat started at 2025-01-01 10:00:00\n\n" +
			"#### [task: login] add a login form to app.py  \n\nI'll add it.\n\napp.py\n```python\n<<<<<<< SEARCH\n=======\ndef login(): pass\n>>>>>>> REPLACE\n```\n\n> Applied edit to app.py  \n\n" +
			"#### [task: other] now make the login form remember the user  \n\nDone.\n",
		"labels/001.json": `{"source":{"repo":"eve/app","format":"aider"},"turns":[` +
			`{"user_prefix":"[task: login] add a login form to app.py","task":"T1","kind":"new","needs":[]},` +
			`{"user_prefix":"[task: other] now make the login form remember the user","task":"T1","kind":"continue","needs":["T1"]}]}`,
		"raw/9a1f.jsonl": `{"type":"user","cwd":"/home/eve/app","message":{"role":"user","content":"what does app.py do?"}}` + "\n" +
			`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"It logs people in."}]}}` + "\n",
	}
	dir := writeCorpus(t, files)
	for _, api := range []string{"chat", "messages", "responses"} {
		r := replayLogsFor(t, dir, "--modes", "native,router", "--thresholds", "0.8", "--api", api)
		if r.Sessions != 2 || r.Labelled != 1 || len(r.Summaries) != 2 {
			t.Fatalf("%s: %d sessions, %d labelled, %d summaries", api, r.Sessions, r.Labelled, len(r.Summaries))
		}
		native, router := r.Summaries[0].AtRequest, r.Summaries[1].AtRequest
		if *native.NeededLost != 0 || router.Calls != 2 || *router.NeededLost != 0.5 || router.ContinueRouted != 1 || *router.SplitOff != 1 {
			t.Errorf("%s: native %+v, router %+v", api, native, router)
		}
		if len(r.Audit) != 2 {
			t.Fatalf("%s: %d audits, want one per session", api, len(r.Audit))
		}
		for _, a := range r.Audit {
			if a.Session == "001" && (len(a.Requests) != 2 || len(a.Requests[1].Dropped) != 1 || a.Requests[1].Dropped[0] != 1 || !a.Requests[1].NeededLost) {
				t.Errorf("%s: audit of 001: %+v", api, a.Requests)
			}
			if a.Session == "9a1f" && (len(a.Requests) != 1 || a.Requests[0].Task == "") {
				t.Errorf("%s: audit of the unlabelled log: %+v", api, a.Requests)
			}
		}
	}
}

// TestBenchReplaySessionsTags: --tags replays a labelled session as if its
// person had named the new task that stands apart: written as is, the
// second request stays with the first task; tagged, it opens its own and
// its calls leave the first task's request out, which it does not need.
func TestBenchReplaySessionsTags(t *testing.T) {
	files := map[string]string{
		"raw/001.md": "# aider chat started at 2025-01-01 10:00:00\n\n" +
			"#### add a login form to app.py  \n\nI'll add it.\n\n> Applied edit to app.py  \n\n" +
			"#### fix the CSV export in report.py  \n\nFixed.\n\n> Applied edit to report.py  \n\n",
		"labels/001.json": `{"source":{"repo":"eve/app","format":"aider"},"turns":[` +
			`{"user_prefix":"add a login form to app.py","task":"T1","kind":"new","needs":[]},` +
			`{"user_prefix":"fix the CSV export in report.py","task":"T2","kind":"new","needs":[]}]}`,
	}
	dir := writeCorpus(t, files)
	for _, c := range []struct {
		tags   string
		method string
		drops  bool
	}{{"", "", false}, {"new", "tag", true}, {"new,return", "tag", true}} {
		r := replayLogsFor(t, dir, "--modes", "router", "--thresholds", "0.8", "--tags", c.tags)
		if len(r.Audit) != 1 || len(r.Audit[0].Requests) != 2 {
			t.Fatalf("--tags %q: audit %+v", c.tags, r.Audit)
		}
		q := r.Audit[0].Requests[1]
		if drops := len(q.Dropped) == 1 && q.Dropped[0] == 1; drops != c.drops || q.NeededLost || c.method != "" && q.Method != c.method {
			t.Errorf("--tags %q: the second request %+v", c.tags, q)
		}
	}
}

// TestBenchReplaySessionsLeftOut: a log whose labels disagree with it is
// left out, said on the console and in both result files, and the other
// logs are replayed and measured.
func TestBenchReplaySessionsLeftOut(t *testing.T) {
	log := "# aider chat started at 2025-01-01 10:00:00\n\n#### add a login form to app.py  \n\nDone.\n\n#### and a logout button  \n\nDone.\n"
	label := `{"source":{"repo":"eve/app","format":"aider"},"turns":[` +
		`{"user_prefix":"add a login form to app.py","task":"T1","kind":"new","needs":[]},` +
		`{"user_prefix":%q,"task":"T1","kind":"continue","needs":["T1"]}]}`
	dir := writeCorpus(t, map[string]string{
		"raw/001.md": log, "labels/001.json": fmt.Sprintf(label, "and a logout button"),
		"raw/002.md": log, "labels/002.json": fmt.Sprintf(label, "and a sign-out button"),
	})
	r, printed, md := replayLogsOut(t, dir, "--modes", "router", "--thresholds", "0.8")
	if r.Sessions != 1 || r.Labelled != 1 || len(r.Summaries) != 1 || len(r.Skipped) != 1 {
		t.Fatalf("%d sessions, %d labelled, %d summaries, skipped %+v", r.Sessions, r.Labelled, len(r.Summaries), r.Skipped)
	}
	sk := r.Skipped[0]
	if sk.Source != filepath.Join(dir, "raw", "002.md") || sk.Record != "labels" || !strings.Contains(sk.Reason, "session 002: turn 2") {
		t.Errorf("skipped %+v", sk)
	}
	if !strings.Contains(printed, "left out or repaired: "+sk.Source+": labels: ") || !strings.Contains(printed, "1 logs or parts of logs left out or repaired") {
		t.Errorf("the console does not say what was left out:\n%s", printed)
	}
	if !strings.Contains(md, "## Left out or repaired when the logs were read") || !strings.Contains(md, "session 002: turn 2") {
		t.Errorf("report.md does not list what was left out")
	}
}

// TestBenchReplayCompactedLog: a Claude Code log that compacted, replayed
// in each API and mode: its summary is a Summary turn on every wire (kept,
// no task, confidence 1), and the request after it is still scored against
// the session's task, in router mode too, which writes no task records
// (before, the router had nothing to match it against there, and it fell
// back at 0, as did every call after it).
func TestBenchReplayCompactedLog(t *testing.T) {
	summary := "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nSummary:\n1. Primary Request and Intent: a CSV export of the reports page.\n\nIf you need specific details from before compaction, read the full transcript.\nContinue the conversation from where it left off."
	line := func(typ, content string, compact bool) string {
		b, _ := json.Marshal(map[string]any{"type": typ, "cwd": "/home/eve/app", "isCompactSummary": compact,
			"message": map[string]any{"role": typ, "content": content}})
		return string(b) + "\n"
	}
	dir := writeCorpus(t, map[string]string{"raw/5c0e.jsonl": line("user", "Add a CSV export to the reports page, with one row per invoice", false) +
		line("assistant", "Added the export.", false) + line("user", summary, true) + line("assistant", "Continuing with the export.", false) +
		line("user", "did you push?", false) + line("assistant", "Yes.", false)})
	for _, api := range []string{"chat", "messages", "responses"} {
		r := replayLogsFor(t, dir, "--modes", "router,rcm", "--thresholds", "0.8", "--api", api)
		if len(r.Audit) != 2 {
			t.Fatalf("%s: %d audits", api, len(r.Audit))
		}
		for _, a := range r.Audit {
			q := a.Requests
			if len(q) != 3 || q[1].Method != "summary" || q[1].Confidence != 1 || q[1].Fallback != "none" {
				t.Fatalf("%s %s: %+v", api, a.Mode, q)
			}
			if q[2].Task != q[0].Task || q[2].Method != "scored" || q[2].Confidence <= 0 {
				t.Errorf("%s %s: the request after the summary: %+v", api, a.Mode, q[2])
			}
			t.Logf("%s %s: %+v", api, a.Mode, q[2])
		}
	}
}

// TestBenchReplayCodexCompactedLog: a Codex rollout that compacted inside
// its second turn, replayed on the Responses wire (as Codex sends it) and
// on the chat wire (Codex's wire_api "chat"), router and rcm mode. The
// call after the compaction sends the rebuilt history: the requests again,
// then the summary, which opens no turn, so that the call is still the
// login task's (its request is the last the history holds) and the return
// after it goes back to the export.
func TestBenchReplayCodexCompactedLog(t *testing.T) {
	line := func(typ string, payload map[string]any) string {
		b, _ := json.Marshal(map[string]any{"type": typ, "payload": payload})
		return string(b) + "\n"
	}
	user := func(s string) string { return line("event_msg", map[string]any{"type": "user_message", "message": s}) }
	answer := func(s string) string {
		return line("response_item", map[string]any{"type": "message", "role": "assistant", "content": []map[string]string{{"type": "output_text", "text": s}}})
	}
	log := line("session_meta", map[string]any{"id": "019a", "cwd": "/home/eve/app"}) +
		user("[task: export] Add a CSV export to the reports page, with one row per invoice") + answer("Added the export.") +
		user("[task: login] Fix the login redirect: after signing in it goes to / instead of the page asked for") +
		line("response_item", map[string]any{"type": "function_call", "name": "shell", "arguments": `{"command":"grep -rn redirect auth/"}`, "call_id": "c1"}) +
		line("response_item", map[string]any{"type": "function_call_output", "call_id": "c1", "output": "auth/login.py:12: return redirect('/')"}) +
		line("compacted", map[string]any{"message": "The CSV export is done. The login redirect is being fixed in auth/login.py."}) +
		answer("Fixed the redirect.") +
		user("[task: export] back to the CSV export: sort it by date") + answer("Sorted.")
	dir := writeCorpus(t, map[string]string{"raw/rollout-2026-11-30T10-00-00-019a.jsonl": log})
	for _, api := range []string{"responses", "chat"} {
		r := replayLogsFor(t, dir, "--modes", "router,rcm", "--thresholds", "0.8", "--api", api)
		if len(r.Audit) != 2 {
			t.Fatalf("%s: %d audits", api, len(r.Audit))
		}
		for _, a := range r.Audit {
			q := a.Requests
			if len(q) != 3 || q[1].Calls != 2 || q[1].Last.Task != "login" || q[1].Last.Fallback != "none" || q[2].Task != "export" || q[2].Fallback != "none" {
				t.Fatalf("%s %s: %+v", api, a.Mode, q)
			}
		}
	}
}
