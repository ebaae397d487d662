package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/bench/report"
	benchrun "github.com/rcm-dev/rcm/bench/run"
	"github.com/rcm-dev/rcm/internal/client/opencode"
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

func scriptedUpstream(t *testing.T, name string) string {
	t.Helper()
	s, err := scripted.LoadScriptFile(filepath.Join(fixture, name))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(scripted.New(s))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// TestBenchRunSetupErrors: bad setups fail before any model call, each
// with a message naming what is wrong.
func TestBenchRunSetupErrors(t *testing.T) {
	repos := fixtureRepos(t)
	up := scriptedUpstream(t, "solve.json")
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

// TestBenchRunOpenCode is the whole path for real: OpenCode from npm,
// rcm in each mode in-process, and the scripted upstream playing a model
// that fixes the fixture's bugs through OpenCode's own tools (read, edit,
// bash, write). The runner scores the focus checkout's patch with the
// fixture's tests, with its test patch (TestAddNegative, a FAIL_TO_PASS
// test, is only there); a second model that breaks a PASS_TO_PASS test is
// counted unresolved.
//
// It skips when npm or its registry cannot be reached, unless CI is set and
// RCM_REQUIRE_OPENCODE=1, where that fails.
func TestBenchRunOpenCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real OpenCode client")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	_, err := opencode.Install(ctx, "", opencode.Version)
	npmtest.Need(t, "OpenCode "+opencode.Version, "RCM_REQUIRE_OPENCODE", err)
	shareGoCache(t)
	repos := fixtureRepos(t)
	spec := filepath.Join(fixture, "spec.json")

	run := func(t *testing.T, script, out string, extra ...string) []benchrun.Result {
		t.Helper()
		start := time.Now()
		var stdout, stderr bytes.Buffer
		args := append([]string{"--spec", spec, "--upstream", scriptedUpstream(t, script), "--model", "fixture-model",
			"--repos", repos, "--out", out, "--budget", "60s", "--continuations", "1", "--concurrency", "2"}, extra...)
		if err := benchRun(args, &stdout, &stderr); err != nil {
			t.Fatalf("bench run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
		t.Logf("bench run %s in %v: %s", script, time.Since(start).Round(time.Millisecond), stdout.String())
		if !regexp.MustCompile(`run: 100%  \d+/\d+ requests  \d+/\d+ runs`).MatchString(stderr.String()) {
			t.Errorf("stderr has no progress lines in a run's words:\n%s", stderr.String())
		}
		runs, err := benchrun.ReadRuns(filepath.Join(out, benchrun.RunsFile))
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}

	t.Run("solve", func(t *testing.T) {
		out := t.TempDir()
		runs := run(t, "solve.json", out)
		if len(runs) != 6 {
			t.Fatalf("%d runs, want 6 (2 conditions x 3 modes)", len(runs))
		}
		modes := map[string]int{}
		for _, r := range runs {
			modes[r.Mode+"/"+r.Condition]++
			if !r.Resolved || !r.Applied || r.FailToPass != (benchrun.TestTally{Passed: 2, Total: 2}) || r.PassToPass.Passed != 2 {
				t.Errorf("run %s: %+v, want resolved with every listed test passing", r.Key, r.Score)
			}
			if r.Requests != 2 || r.Answered != 2 || r.TurnErrors != 0 || r.Timeouts != 0 {
				t.Errorf("run %s: %d of %d requests answered (%d errors, %d timeouts), want 2 of 2", r.Key, r.Answered, r.Requests, r.TurnErrors, r.Timeouts)
			}
			if r.Calls < 6 || r.SentTokens <= 0 || r.ForwardedTokens <= 0 || r.UsageCalls != r.Calls || r.PromptTokens <= 0 {
				t.Errorf("run %s: accounting %+v, want every call counted with tokens and usage", r.Key, r.Usage)
			}
			patch, err := os.ReadFile(filepath.Join(out, "patches", strings.NewReplacer("|", "_", "/", "_").Replace(r.Key)+".diff"))
			if err != nil {
				t.Fatal(err)
			}
			// Switching changes only the active checkout: the focus
			// patch holds Add's fix and none of the distractors' work.
			if !bytes.Contains(patch, []byte("+\treturn a + b")) || bytes.Contains(patch, []byte("ToUpper")) || bytes.Contains(patch, []byte("CHANGELOG")) {
				t.Errorf("run %s: focus patch:\n%s", r.Key, patch)
			}
			if r.Condition == benchrun.ConditionSwitch {
				if len(r.Distractors) != 4 {
					t.Fatalf("run %s: distractors %+v", r.Key, r.Distractors)
				}
				for _, d := range r.Distractors {
					if d.Requests != 1 || d.Answered != 1 || !d.Changed {
						t.Errorf("run %s: distractor %+v, want its request answered and its checkout changed", r.Key, d)
					}
				}
				if r.Calls <= 6 {
					t.Errorf("run %s: %d calls; a switched schedule makes more than the base one", r.Key, r.Calls)
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
		// A rerun resumes: everything is done, nothing runs again.
		var stdout, stderr bytes.Buffer
		args := []string{"--spec", spec, "--upstream", scriptedUpstream(t, "solve.json"), "--model", "fixture-model", "--repos", repos, "--out", out}
		if err := benchRun(args, &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout.String(), "0 done now, 6 done before") {
			t.Errorf("rerun said %q, want every run skipped", stdout.String())
		}
	})

	t.Run("break", func(t *testing.T) {
		runs := run(t, "break.json", t.TempDir(), "--modes", "native", "--conditions", "base")
		if len(runs) != 1 {
			t.Fatalf("%d runs, want 1", len(runs))
		}
		r := runs[0]
		if r.Resolved || !r.Applied || r.FailToPass.Passed != 2 || r.PassToPass.Passed != 1 || len(r.Failed) != 1 || r.Failed[0] != "TestSub" {
			t.Errorf("breaking run scored %+v, want unresolved with TestSub failing", r.Score)
		}
	})
}
