package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/internal/client/opencode"
	"github.com/rcm-dev/rcm/internal/npm/npmtest"
	"github.com/rcm-dev/rcm/internal/pgtest"
	"github.com/rcm-dev/rcm/internal/scripted"
)

// replicaCall is one call of a test session: a captured request, its
// history cut at a point where the harness would call.
type replicaCall struct {
	key    string // session/index, sent upstream as X-Test-Call
	path   string
	header http.Header
	body   []byte
}

// replicaSessions builds n sessions from the captured agent requests of
// OpenCode, Claude Code and Codex: each re-sends its capture's history
// cut after every user message or tool result (as the harness calls),
// then opens a second task and returns to the first by tag, and ends with
// its client's captured compaction call, which rcm mode fills with every
// task's record of the session.
func replicaSessions(t *testing.T, n int) [][]replicaCall {
	type source struct {
		dir        string
		agent      []string
		compaction string
	}
	sources := []source{
		{capture.Dir(), []string{"first_agent_request", "continue_request", "tool_result_request", "after_autocompaction_request", "anthropic_messages_request", "responses_api_request"}, "compaction_manual_request"},
		{capture.ClaudeCodeDir(), []string{"first_agent_request", "continue_request", "tool_result_request", "interactive_first_request", "resume_by_id_request", "after_manual_compaction_request"}, "compaction_manual_request"},
		{capture.CodexDir(), []string{"first_agent_request", "tool_result_request", "classic_tools_tool_result_request", "resume_by_id_request", "resume_last_request", "after_compaction_request", "tui_first_request"}, "compaction_inline_request"},
	}
	var out [][]replicaCall
	for i := range n {
		src := sources[i%len(sources)]
		req := capture.LoadIn(t, src.dir, src.agent[(i/len(sources))%len(src.agent)])
		session := fmt.Sprintf("replica-%02d", i)
		field := "messages"
		if strings.Contains(req.Path, "responses") {
			field = "input"
		}
		var items []string
		gjson.GetBytes(req.Body, field).ForEach(func(_, v gjson.Result) bool {
			items = append(items, v.Raw)
			return true
		})
		items = append(items,
			`{"role":"user","content":"[task: changelog] Separately: write the changelog entry for this release."}`,
			`{"role":"assistant","content":"Done: CHANGELOG.md has the entry."}`,
			`{"role":"user","content":"[task: t1] Back to the first task: run the tests again and fix what fails."}`)
		var calls []replicaCall
		add := func(r capture.Request, body []byte) {
			h := r.Header.Clone()
			h.Set("X-RCM-Session", session)
			h.Set("X-RCM-Mode", "rcm")
			key := fmt.Sprintf("%s/%02d", session, len(calls))
			h.Set("X-Test-Call", key)
			calls = append(calls, replicaCall{key, r.Path, h, body})
		}
		for k := 1; k <= len(items); k++ {
			last := gjson.Parse(items[k-1])
			role, typ := last.Get("role").String(), last.Get("type").String()
			if role == "assistant" || role == "system" || role == "developer" || typ == "function_call" || typ == "custom_tool_call" || typ == "reasoning" {
				continue
			}
			// Harness context (Codex's <environment_context>) is no
			// request: no harness calls after it alone.
			if text := last.Get("content.0.text").String() + last.Get("content").Str; strings.HasPrefix(text, "<environment_context>") {
				continue
			}
			body, err := sjson.SetRawBytes(bytes.Clone(req.Body), field, []byte("["+strings.Join(items[:k], ",")+"]"))
			if err != nil {
				t.Fatal(err)
			}
			add(req, body)
		}
		comp := capture.LoadIn(t, src.dir, src.compaction)
		add(comp, comp.Body)
		out = append(out, calls)
	}
	return out
}

// forwarded runs every session's calls in order, the sessions at once,
// each call through one of addrs picked by pick, and returns what the
// upstream received for each call.
func forwarded(t *testing.T, up *scripted.Server, sessions [][]replicaCall, addrs []string, pick func(session, call int) int) map[string][]byte {
	t.Helper()
	up.Reset()
	var wg sync.WaitGroup
	errs := make(chan error, len(sessions))
	for si, calls := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ci, c := range calls {
				addr := addrs[pick(si, ci)]
				req, err := http.NewRequest(http.MethodPost, "http://"+addr+c.path, bytes.NewReader(c.body))
				if err != nil {
					errs <- err
					return
				}
				req.Header = c.header.Clone()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", c.key, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Header.Get("X-RCM-Fallback") == "error" {
					errs <- fmt.Errorf("%s: status %d, fallback %q", c.key, resp.StatusCode, resp.Header.Get("X-RCM-Fallback"))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, r := range up.Requests() {
		if k := r.Header.Get("X-Test-Call"); k != "" {
			got[k] = r.Body
		}
	}
	return got
}

// TestTwoReplicasForwardAsOne: two `rcm serve` processes on one
// PostgreSQL database, 20 sessions of captured OpenCode, Claude Code and
// Codex calls (a task switch and back, a compaction) sent to either at
// random: every call's forwarded body is byte-identical to the same call
// through one rcm on PostgreSQL, and through one rcm on bbolt.
func TestTwoReplicasForwardAsOne(t *testing.T) {
	pgtest.Need(t)
	up := scripted.New(scripted.Script{Default: scripted.Reply{Text: "Done."}})
	srv := httptest.NewServer(up)
	defer srv.Close()
	sessions := replicaSessions(t, 20)
	var logs []<-chan string
	var a, b string
	serveOn := func(store ...string) string {
		cmd := command(append([]string{"serve", "--listen", "127.0.0.1:0", "--upstream", srv.URL + "/v1", "--anthropic-upstream", srv.URL, "--mode", "rcm"}, store...)...)
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		addr, lines := startServe(t, cmd)
		logs = append(logs, lines)
		return addr
	}
	defer func() {
		if t.Failed() {
			for _, addr := range []string{a, b} {
				resp, err := http.Get("http://" + addr + "/rcm/metrics")
				if err == nil {
					m, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					for _, l := range strings.Split(string(m), "\n") {
						if strings.Contains(l, "store_wait") {
							t.Logf("%s: %s", addr, l)
						}
					}
				}
			}
			for i, l := range logs {
				for len(l) > 0 {
					t.Logf("rcm %d: %s", i, <-l)
				}
			}
		}
	}()
	calls := 0
	for _, s := range sessions {
		calls += len(s)
	}

	boltAddr, oneAddr := serveOn("--db", filepath.Join(t.TempDir(), "rcm.db")), serveOn("--store", pgtest.Schema(t))
	bolt := forwarded(t, up, sessions, []string{boltAddr}, func(int, int) int { return 0 })
	one := forwarded(t, up, sessions, []string{oneAddr}, func(int, int) int { return 0 })
	shared := pgtest.Schema(t)
	a, b = serveOn("--store", shared), serveOn("--store", shared)
	rng := rand.New(rand.NewPCG(25, 2))
	var mu sync.Mutex
	two := forwarded(t, up, sessions, []string{a, b}, func(int, int) int {
		mu.Lock()
		defer mu.Unlock()
		return rng.IntN(2)
	})
	if len(bolt) != calls {
		t.Fatalf("the upstream saw %d of %d calls", len(bolt), calls)
	}
	// The calls must exercise the store: most routed (what they forward
	// differs from what was sent), and records injected.
	changed, records := 0, 0
	for _, s := range sessions {
		for _, c := range s {
			if !bytes.Equal(bolt[c.key], c.body) {
				changed++
			}
			if bytes.Contains(bolt[c.key], []byte("rcm-task-state")) {
				records++
			}
		}
	}
	if changed < calls/2 || records < len(sessions) {
		t.Fatalf("of %d calls only %d were changed and %d carried a record: the test does not exercise the store", calls, changed, records)
	}
	// A call waits for its session's earlier writes 2 s at most (on a
	// starved machine it may go on without them: the "bound" outcome), so
	// each such wait may let one session depart; every other session
	// must forward the same bytes.
	compare := func(what string, got, want map[string][]byte, bounds int) int {
		var departed []string
		for _, s := range sessions {
			for _, c := range s {
				if !bytes.Equal(got[c.key], want[c.key]) {
					departed = append(departed, fmt.Sprintf("%s: %s forwarded %s", c.key, what, diff(got[c.key], want[c.key])))
					break
				}
			}
		}
		if len(departed) > bounds {
			t.Errorf("%d sessions departed, %d waits ran out:\n%s", len(departed), bounds, strings.Join(departed, "\n"))
		} else if len(departed) > 0 {
			t.Logf("%d sessions departed after %d waits ran out their bound:\n%s", len(departed), bounds, strings.Join(departed, "\n"))
		}
		return len(departed)
	}
	n := compare("one replica on PostgreSQL", one, bolt, boundWaits(t, boltAddr)+boundWaits(t, oneAddr))
	n += compare("two replicas", two, one, boundWaits(t, a)+boundWaits(t, b)+boundWaits(t, oneAddr))
	t.Logf("%d sessions, %d calls (%d changed by rcm, %d with a task record): two replicas forwarded what one does, byte for byte, in all but %d sessions whose waits ran out", len(sessions), calls, changed, records, n)
}

// boundWaits reads how many of a server's calls ran out the bound of their
// wait for the session's earlier writes.
func boundWaits(t *testing.T, addr string) int {
	t.Helper()
	n, _ := sample(t, addr, `rcm_store_waits_total{outcome="bound"}`)
	return n
}

// diff shows where got departs from want.
func diff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-200)
	return fmt.Sprintf("%d bytes, want %d; from byte %d:\n%.400s\nwant\n%.400s", len(got), len(want), from, got[from:], want[from:])
}

// TestTwoReplicasRealOpenCode runs the real OpenCode client through a
// balancer that sends each of its calls to the other of two `rcm serve`
// replicas sharing one PostgreSQL database: a task, a second one, a return
// to the first by tag, and OpenCode's own compaction. Then it sends the
// very requests OpenCode made, in the order they came, through one rcm on
// a database of its own: every call's forwarded body is byte-identical.
func TestTwoReplicasRealOpenCode(t *testing.T) {
	pgtest.Need(t)
	ctx, bin := npmtest.OpenCode.Prepare(t, 5*time.Minute)

	script := scripted.Marked()
	script.Models = []string{opencode.DefaultModelID}
	up := scripted.New(script)
	srv := httptest.NewServer(up)
	defer srv.Close()
	serveOn := func(store string) string {
		cmd := command("serve", "--listen", "127.0.0.1:0", "--upstream", srv.URL+"/v1", "--mode", "rcm", "--store", store)
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		addr, _ := startServe(t, cmd)
		return addr
	}
	shared := pgtest.Schema(t)
	replicas := []string{serveOn(shared), serveOn(shared)}

	// The balancer: call n goes to replica n%2, marked X-Test-Call: n.
	type call struct {
		path   string
		header http.Header
		body   []byte
	}
	var mu sync.Mutex
	var calls []call
	lb := httptest.NewServer(&httputil.ReverseProxy{
		FlushInterval: -1,
		Rewrite: func(pr *httputil.ProxyRequest) {
			body, _ := io.ReadAll(pr.In.Body)
			pr.Out.Body = io.NopCloser(bytes.NewReader(body))
			mu.Lock()
			n := len(calls)
			pr.Out.Header.Set("X-Test-Call", strconv.Itoa(n))
			calls = append(calls, call{pr.In.URL.Path, pr.Out.Header.Clone(), body})
			mu.Unlock()
			pr.SetURL(&url.URL{Scheme: "http", Host: replicas[n%2]})
		},
	})
	defer lb.Close()

	home := t.TempDir()
	env, err := opencode.Env(home)
	if err != nil {
		t.Fatal(err)
	}
	if err := (opencode.Config{Proxy: lb.URL, APIKey: "sk-client", Modes: []string{"rcm"}}).Write(opencode.GlobalConfig(home)); err != nil {
		t.Fatal(err)
	}
	oc, err := opencode.Start(ctx, bin, t.TempDir(), env, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	dir := t.TempDir()
	s, err := oc.CreateSession(ctx, dir, "two tasks")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		"[task: alpha] Greet. RUN: echo hello-from-tool",
		"[task: beta] Write the note. RUN: echo written > note.txt",
		"[task: alpha] Greet once more. RUN: echo hello-again",
	} {
		m, err := oc.Prompt(ctx, s.ID, dir, "rcm", opencode.DefaultModelID, text)
		if err != nil {
			t.Fatalf("%v\nopencode output:\n%s", err, oc.Output())
		}
		if !strings.HasPrefix(m.Text(), "Done: ") {
			t.Fatalf("turn %q answered %q, want the tool's result reported", text, m.Text())
		}
	}
	if err := oc.Summarize(ctx, s.ID, dir, "rcm", opencode.DefaultModelID); err != nil {
		t.Fatalf("%v\nopencode output:\n%s", err, oc.Output())
	}
	two := map[string][]byte{}
	for _, r := range up.Requests() {
		two[r.Header.Get("X-Test-Call")] = r.Body
	}

	up.Reset()
	one := serveOn(pgtest.Schema(t))
	mu.Lock()
	sent := slices.Clone(calls)
	mu.Unlock()
	for _, c := range sent {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+one+c.path, bytes.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = c.header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	routed, records := 0, 0
	for _, r := range up.Requests() {
		k := r.Header.Get("X-Test-Call")
		if !bytes.Equal(two[k], r.Body) {
			t.Errorf("call %s: two replicas forwarded %s", k, diff(two[k], r.Body))
		}
		if r.Kind == "agent" && !bytes.Equal(r.Body, sent[mustAtoi(t, k)].body) {
			routed++
		}
		if bytes.Contains(r.Body, []byte("rcm-task-state")) {
			records++
		}
	}
	if len(two) != len(sent) || routed < 4 || records < 2 {
		t.Fatalf("%d calls sent, %d forwarded; %d agent calls changed by rcm, %d carrying a record: the run does not exercise the shared store", len(sent), len(two), routed, records)
	}
	t.Logf("OpenCode made %d calls across two replicas (%d agent calls routed, %d with a task record): one replica forwards the same bytes", len(sent), routed, records)
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
