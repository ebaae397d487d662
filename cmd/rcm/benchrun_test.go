package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/bench/report"
	"github.com/rcm-dev/rcm/bench/run"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/internal/npm/npmtest"
	"github.com/rcm-dev/rcm/internal/scripted"
)

// fixture is the bench runner's fixture: a Go module with two bugs (Add,
// Shout), the spec of one session whose focus task fixes Add, and two
// scripted models, one that solves the tasks and one that breaks Sub.
var fixture = filepath.Join("..", "..", "bench", "run", "testdata", "fixture")

// fixtureRepos commits the fixture module into a fresh clone under
// DIR/fixture/calc and returns DIR.
func fixtureRepos(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	repo := filepath.Join(dir, "fixture", "calc")
	if err := os.CopyFS(repo, os.DirFS(filepath.Join(fixture, "repo"))); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q"}, {"add", "-A"},
		{"-c", "user.name=rcm", "-c", "user.email=rcm@example.com", "commit", "-q", "-m", "fixture"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

// shareGoCache makes an agent's go test share this machine's build cache
// (harnesses run with a private HOME) and never download a toolchain.
func shareGoCache(t *testing.T) {
	t.Helper()
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(v, strings.TrimSpace(string(out)))
	}
	t.Setenv("GOTOOLCHAIN", "local")
	t.Setenv("GOFLAGS", "")
}

// fixtureScript loads one of the fixture's scripted models.
func fixtureScript(t *testing.T, name string) scripted.Script {
	t.Helper()
	s, err := scripted.LoadScriptFile(filepath.Join(fixture, name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// scriptedUpstream serves s and returns it with its URL.
func scriptedUpstream(t *testing.T, s scripted.Script) (*scripted.Server, string) {
	t.Helper()
	up := scripted.New(s)
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	return up, srv.URL
}

// TestBenchRunSetupErrors: bad setups fail before any model call, each
// with a message naming what is wrong.
func TestBenchRunSetupErrors(t *testing.T) {
	repos := fixtureRepos(t)
	_, up := scriptedUpstream(t, fixtureScript(t, "solve.json"))
	up += "/v1"
	spec := filepath.Join(fixture, "spec.json")
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"version": 1, "tasks": [{"id": "a", "repository": "", "stages": []}], "sessions": []}`), 0o644)
	noCommit := filepath.Join(t.TempDir(), "commit.json")
	b, _ := os.ReadFile(spec)
	os.WriteFile(noCommit, bytes.Replace(b, []byte(`"repository": "fixture/calc",`), []byte(`"repository": "fixture/calc", "base_commit": "0123456789abcdef0123456789abcdef01234567",`), 1), 0o644)
	base := []string{"--model", "m", "--out", t.TempDir()}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing flags", []string{"--spec", spec}, "missing --upstream, --repos"},
		{"invalid spec", []string{"--spec", bad, "--upstream", up, "--repos", repos}, "task a: repository: empty"},
		{"no clone", []string{"--spec", spec, "--upstream", up, "--repos", t.TempDir()}, "repository fixture/calc: no git clone"},
		{"no commit", []string{"--spec", noCommit, "--upstream", up, "--repos", repos}, `commit "0123456789abcdef0123456789abcdef01234567" not found`},
		{"unreachable upstream", []string{"--spec", spec, "--upstream", "http://127.0.0.1:9/v1", "--repos", repos}, "upstream http://127.0.0.1:9/v1 is unreachable"},
		{"no harness binary", []string{"--spec", spec, "--upstream", up, "--repos", repos, "--opencode-bin", "/nonexistent/opencode"}, "--opencode-bin"},
		{"unknown harness", []string{"--spec", spec, "--upstream", up, "--repos", repos, "--harness", "aider"}, `--harness "aider"`},
		{"no codex binary", []string{"--spec", spec, "--upstream", up, "--repos", repos, "--harness", "codex", "--codex-bin", "/nonexistent/codex"}, "--codex-bin"},
		{"no claude binary", []string{"--spec", spec, "--upstream", strings.TrimSuffix(up, "/v1"), "--repos", repos, "--harness", "claude-code", "--claude-bin", "/nonexistent/claude"}, "--claude-bin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := benchRun(append(c.args, base...), &out, &errb)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// benchHarness is a harness TestBenchRun drives through the fixture.
type benchHarness struct {
	name   string         // --harness
	client npmtest.Client // installed before the runs
	// model plays a model that solves the fixture through the harness's
	// own tools; path is the upstream's base below the server's URL.
	model func(t *testing.T) scripted.Script
	path  string
	args  []string // the harness's own flags
	calls int      // the fewest calls a run makes
	// check checks what else the harness's runs must show (upstream is
	// the model's server, out the runs' folder).
	check func(t *testing.T, up *scripted.Server, out string, runs []run.Result)
}

// benchHarnesses are OpenCode (with the fixture's JSON script, through its
// read, edit, bash and write tools), Claude Code (`claude -p`) and Codex
// (`codex exec`, over HTTP), the last two with fixtureModel.
var benchHarnesses = []benchHarness{
	{name: "opencode", client: npmtest.OpenCode, path: "/v1", calls: 6,
		model: func(t *testing.T) scripted.Script { return fixtureScript(t, "solve.json") },
		args:  []string{"--budget", "60s"}, check: checkOpenCodeRuns},
	// The runner itself fails a run whose calls did not carry the arm's
	// X-RCM-Threshold (ANTHROPIC_CUSTOM_HEADERS).
	{name: "claude-code", client: npmtest.ClaudeCode, calls: 5,
		model: func(*testing.T) scripted.Script { return fixtureModel(claudeTools) },
		args:  []string{"--budget", "120s", "--context", "200000"}, check: checkClaudeRuns},
	// The runner fails a run whose calls did not carry X-RCM-Threshold
	// (the provider's http_headers).
	{name: "codex", client: npmtest.Codex, path: "/v1", calls: 5,
		model: func(*testing.T) scripted.Script { return fixtureModel(codexTools) },
		args:  []string{"--budget", "120s", "--context", "200000"}, check: checkCodexRuns},
}

// TestBenchRun is the whole path for real, for each harness: the client
// from npm, rcm in each mode in-process, and a scripted upstream playing a
// model that fixes the fixture's bugs through the harness's own tools. The
// runner scores the focus checkout's patch with the fixture's tests, with
// its test patch (TestAddNegative, a FAIL_TO_PASS test, is only there):
// every run must be resolved, every call counted with the upstream's
// usage, the focus patch hold Add's fix and none of the distractors' work,
// each distractor's request be answered and its checkout changed; the
// report covers the runs and a rerun resumes.
//
// Each harness skips when npm or its registry cannot be reached, unless CI
// is set and its RCM_REQUIRE_* variable is 1, where that fails.
func TestBenchRun(t *testing.T) {
	for _, h := range benchHarnesses {
		t.Run(h.name, func(t *testing.T) {
			h.client.Prepare(t, 8*time.Minute)
			shareGoCache(t)
			up, url := scriptedUpstream(t, h.model(t))
			args := append([]string{"--harness", h.name, "--spec", filepath.Join(fixture, "spec.json"), "--upstream", url + h.path,
				"--model", "fixture-model", "--repos", fixtureRepos(t), "--continuations", "1", "--concurrency", "2"}, h.args...)
			out, runs := benchRuns(t, args)
			checkRuns(t, h, runs, out)
			// A rerun resumes: everything is done, nothing runs again.
			var stdout, stderr bytes.Buffer
			if err := benchRun(append(slices.Clip(args), "--out", out), &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stdout.String(), "0 done now, 6 done before") {
				t.Errorf("rerun said %q, want every run skipped", stdout.String())
			}
			h.check(t, up, out, runs)
		})
	}
}

// benchRuns runs `rcm bench run ARGS` into a new folder and returns the
// folder and its runs.
func benchRuns(t *testing.T, args []string) (string, []run.Result) {
	t.Helper()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	if err := benchRun(append(slices.Clip(args), "--out", out), &stdout, &stderr); err != nil {
		t.Fatalf("bench run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("bench run in %v: %s", time.Since(start).Round(time.Millisecond), stdout.String())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	})
	if !regexp.MustCompile(`run: 100%  \d+/\d+ requests  \d+/\d+ runs`).MatchString(stderr.String()) {
		t.Errorf("stderr has no progress lines in a run's words:\n%s", stderr.String())
	}
	runs, err := run.ReadRuns(filepath.Join(out, run.RunsFile))
	if err != nil {
		t.Fatal(err)
	}
	return out, runs
}

// checkRuns checks what every harness's runs must show (see TestBenchRun).
func checkRuns(t *testing.T, h benchHarness, runs []run.Result, out string) {
	t.Helper()
	if len(runs) != 6 {
		t.Fatalf("%d runs, want 6 (2 conditions x 3 modes)", len(runs))
	}
	modes := map[string]int{}
	for _, r := range runs {
		modes[r.Mode+"/"+r.Condition]++
		if r.Harness != h.name || !r.Resolved || !r.Applied || r.FailToPass != (run.TestTally{Passed: 2, Total: 2}) || r.PassToPass.Passed != 2 {
			t.Errorf("run %s (%s): %+v, want resolved with every listed test passing", r.Key, r.Harness, r.Score)
		}
		if r.Requests != 2 || r.Answered != 2 || r.TurnErrors != 0 || r.Timeouts != 0 {
			t.Errorf("run %s: %d of %d requests answered (%d errors, %d timeouts), want 2 of 2", r.Key, r.Answered, r.Requests, r.TurnErrors, r.Timeouts)
		}
		// One session per schedule: the meter counted every call of the
		// run under the one id the harness was started with.
		if r.Calls < h.calls || r.SentTokens <= 0 || r.ForwardedTokens <= 0 || r.UsageCalls != r.Calls || r.PromptTokens <= 0 {
			t.Errorf("run %s: accounting %+v, want every call counted with tokens and usage", r.Key, r.Usage)
		}
		t.Logf("run %s: %d calls, %d of %d requests answered", r.Key, r.Calls, r.Answered, r.Requests)
		patch, err := os.ReadFile(filepath.Join(out, "patches", strings.NewReplacer("|", "_", "/", "_").Replace(r.Key)+".diff"))
		if err != nil {
			t.Fatal(err)
		}
		// Switching changes only the active checkout: the focus patch
		// holds Add's fix and none of the distractors' work.
		if !bytes.Contains(patch, []byte("+\treturn a + b")) || bytes.Contains(patch, []byte("ToUpper")) || bytes.Contains(patch, []byte("CHANGELOG")) {
			t.Errorf("run %s: focus patch:\n%s", r.Key, patch)
		}
		if r.Condition == run.ConditionSwitch {
			// A switched schedule makes more calls than the base one.
			if len(r.Distractors) != 4 || r.Calls <= h.calls {
				t.Errorf("run %s: %d distractors, %d calls", r.Key, len(r.Distractors), r.Calls)
			}
			for _, d := range r.Distractors {
				if d.Requests != 1 || d.Answered != 1 || !d.Changed {
					t.Errorf("run %s: distractor %+v, want its request answered and its checkout changed", r.Key, d)
				}
			}
		}
	}
	for _, k := range []string{"native/base", "native/switch", "router/base", "router/switch", "rcm/base", "rcm/switch"} {
		if modes[k] != 1 {
			t.Errorf("runs per mode and condition %v, want one each", modes)
			break
		}
	}
	rep, err := report.Write(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range rep.Arms {
		if a.ResUnint != 1 || a.ResSwitch != 1 || a.Gap != 0 || a.DistractorChanged != 1 {
			t.Errorf("arm %s: %+v", a.Mode, a)
		}
	}
	for _, f := range []string{report.RunReportFile, report.RunSummaryFile, report.RunSummaryCSV, report.RunsCSV, report.RunResolvedSVG, report.RunSweepSVG} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("report file %s: %v", f, err)
		}
	}
}

// checkOpenCodeRuns: a second model that breaks a PASS_TO_PASS test
// (TestSub) is counted unresolved.
func checkOpenCodeRuns(t *testing.T, _ *scripted.Server, _ string, _ []run.Result) {
	_, url := scriptedUpstream(t, fixtureScript(t, "break.json"))
	_, runs := benchRuns(t, []string{"--spec", filepath.Join(fixture, "spec.json"), "--upstream", url + "/v1", "--model", "fixture-model",
		"--repos", fixtureRepos(t), "--budget", "60s", "--continuations", "1", "--modes", "native", "--conditions", "base"})
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	r := runs[0]
	if r.Resolved || !r.Applied || r.FailToPass.Passed != 2 || r.PassToPass.Passed != 1 || len(r.Failed) != 1 || r.Failed[0] != "TestSub" {
		t.Errorf("breaking run scored %+v, want unresolved with TestSub failing", r.Score)
	}
}

// checkClaudeRuns: every stage of a schedule is one Claude Code session.
func checkClaudeRuns(t *testing.T, up *scripted.Server, _ string, _ []run.Result) {
	sessions := map[string]bool{}
	for _, r := range up.Requests() {
		if id := r.Header.Get("X-Claude-Code-Session-Id"); id != "" { // not the upstream check's GET /v1/models
			sessions[id] = true
		}
	}
	if len(sessions) != 6 {
		t.Errorf("%d Claude Code sessions reached the model, want 6 (one per run)", len(sessions))
	}
}

// checkCodexRuns: every schedule is one Codex thread resumed turn after
// turn, every call of which the meter counted, the last one included
// (Codex exits on its last event); a routing arm forwards the submit of
// the focus task without the distractors' requests.
func checkCodexRuns(t *testing.T, up *scripted.Server, _ string, runs []run.Result) {
	for _, r := range runs {
		calls := up.Session(r.HarnessS)
		if r.Calls != len(calls) {
			t.Errorf("run %s: %d calls counted, %d reached the model", r.Key, r.Calls, len(calls))
		}
		threads := map[string]bool{}
		for _, c := range calls {
			threads[c.Header.Get("Session-Id")] = true
		}
		if len(threads) != 1 || threads[""] {
			t.Errorf("run %s: Codex threads %v, want one", r.Key, threads)
		}
		t.Logf("run %s: %d tokens sent, %d forwarded", r.Key, r.SentTokens, r.ForwardedTokens)
		// Codex runs in the run's folder, which is no git repository (its
		// turn metadata lists no workspace), so each checkout below it is
		// a task of its own.
		if r.Condition == run.ConditionSwitch && r.Mode != "native" && len(calls) > 0 {
			last := calls[len(calls)-1].Body
			if !bytes.Contains(last, []byte("Submit:")) || strings.Contains(chattest.OutsideRecords(string(last)), "Shout lowercases") || r.ForwardedTokens >= r.SentTokens {
				t.Errorf("run %s: the last call kept the other tasks (%d tokens sent, %d forwarded)", r.Key, r.SentTokens, r.ForwardedTokens)
			}
		}
	}
	sessions := map[string]bool{}
	for _, r := range up.Requests() {
		if r.Session != "" { // not the upstream check's GET /v1/models
			sessions[r.Session] = true
		}
	}
	if len(sessions) != 6 {
		t.Errorf("%d Codex sessions reached the model, want 6 (one per run)", len(sessions))
	}
}
