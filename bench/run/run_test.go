package run

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/bench/harness"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
)

// fixtureClone commits the fixture module (testdata/fixture/repo) into a
// fresh clone under DIR/fixture/calc and returns DIR.
func fixtureClone(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	repo := filepath.Join(dir, "fixture", "calc")
	if err := os.CopyFS(repo, os.DirFS("testdata/fixture/repo")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"},
		{"-c", "user.name=rcm", "-c", "user.email=rcm@example.com", "commit", "-q", "-m", "fixture"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

// fakeHarness plays an agent without a model: a request naming a checkout
// gets a file edit there; stall makes the first prompt of each session
// outlast its budget (its continuation then does the work); block makes
// every prompt wait until cancelled.
type fakeHarness struct {
	stall, block bool
	mu           sync.Mutex
	prompts      []string
	opened       chan struct{}
}

var checkoutRE = regexp.MustCompile(`checkout (\S+)`)

func (h *fakeHarness) Name() string { return "fake" }
func (h *fakeHarness) Close() error { return nil }
func (h *fakeHarness) Open(ctx context.Context, arm harness.Arm, dir, title string) (harness.Agent, error) {
	if h.opened != nil {
		h.opened <- struct{}{}
	}
	return &fakeAgent{h: h, dir: dir}, nil
}

type fakeAgent struct {
	h       *fakeHarness
	dir     string
	n       int
	pending string
}

func (a *fakeAgent) ID() string { return "ses_" + filepath.Base(a.dir) }

func (a *fakeAgent) Prompt(ctx context.Context, text string) error {
	a.h.mu.Lock()
	a.h.prompts = append(a.h.prompts, text)
	a.h.mu.Unlock()
	a.n++
	if a.h.block || (a.h.stall && a.n == 1) {
		a.pending = text
		<-ctx.Done()
		return ctx.Err()
	}
	if text == DefaultContinuePrompt {
		text = a.pending
	}
	m := checkoutRE.FindStringSubmatch(text)
	if m == nil {
		return nil
	}
	ws := m[1]
	switch {
	case strings.Contains(text, "instead of their sum"):
		return replaceIn(filepath.Join(ws, "calc", "add.go"), "a - b", "a + b")
	case strings.Contains(text, "Shout lowercases"):
		return replaceIn(filepath.Join(ws, "text", "shout.go"), "ToLower(s) +", "ToUpper(s) +")
	}
	return os.WriteFile(filepath.Join(ws, "NOTES"), []byte(text), 0o644)
}

func replaceIn(path, old, new string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644)
}

func fakeRun(t *testing.T, h harness.Harness, out string) Options {
	t.Helper()
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(health.Close)
	return Options{Proxy: health.URL, Meter: NewMeter(http.NotFoundHandler()), Harness: h,
		Repos: &Repos{Dir: fixtureClone(t)}, Out: out, Modes: []string{benchspec.ModeNative, benchspec.ModeRCM}}
}

// TestRunFakeHarness: the runner's whole loop without a model: worktree
// checkouts, schedule order, continuation after a budget runs out,
// scoring, distractor completion, JSONL and resume.
func TestRunFakeHarness(t *testing.T) {
	spec, err := benchspec.Load("testdata/fixture/spec.json")
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHarness{stall: true}
	out := t.TempDir()
	opts := fakeRun(t, h, out)
	opts.Budget = 200 * time.Millisecond
	st, err := Run(t.Context(), spec, opts)
	if err != nil || st.Done != 4 {
		t.Fatalf("Run: %+v, %v", st, err)
	}
	runs, err := ReadRuns(filepath.Join(out, RunsFile))
	if err != nil || len(runs) != 4 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	for _, r := range runs {
		if !r.Resolved || r.Continuations != 1 || r.Answered != 2 || r.Timeouts != 0 {
			t.Errorf("run %s: resolved %v, %d continuations, %d answered: %+v", r.Key, r.Resolved, r.Continuations, r.Answered, r.Score)
		}
		if r.Condition == ConditionSwitch {
			for _, d := range r.Distractors {
				if !d.Changed || d.Answered != 1 {
					t.Errorf("run %s: distractor %+v", r.Key, d)
				}
			}
		}
	}
	if h.prompts[1] != DefaultContinuePrompt {
		t.Errorf("second prompt %q, want the continuation", h.prompts[1])
	}
	// Checkouts are removed after scoring.
	if left, _ := os.ReadDir(filepath.Join(out, "work")); len(left) != 0 {
		t.Errorf("checkouts left behind: %v", left)
	}
	// A rerun resumes: nothing left to do.
	st, err = Run(t.Context(), spec, opts)
	if err != nil || st.Skipped != 4 || st.Done != 0 {
		t.Errorf("rerun: %+v, %v", st, err)
	}
}

// TestRunTimeoutUnanswered: a request that outlasts its budget and every
// continuation is recorded as timed out, and the run still scores.
func TestRunTimeoutUnanswered(t *testing.T) {
	spec, _ := benchspec.Load("testdata/fixture/spec.json")
	opts := fakeRun(t, &fakeHarness{block: true}, t.TempDir())
	opts.Budget, opts.Continuations = 20*time.Millisecond, 2
	opts.Modes, opts.Conditions = []string{benchspec.ModeNative}, []string{ConditionBase}
	if _, err := Run(t.Context(), spec, opts); err != nil {
		t.Fatal(err)
	}
	runs, _ := ReadRuns(filepath.Join(opts.Out, RunsFile))
	if len(runs) != 1 || runs[0].Timeouts != 2 || runs[0].Continuations != 4 || runs[0].Resolved || runs[0].Answered != 0 {
		t.Fatalf("runs %+v", runs)
	}
}

// TestRunCancel: Ctrl-C during a run abandons it: nothing is appended,
// its checkouts are removed, and Run says it was cancelled.
func TestRunCancel(t *testing.T) {
	spec, _ := benchspec.Load("testdata/fixture/spec.json")
	h := &fakeHarness{block: true, opened: make(chan struct{}, 1)}
	opts := fakeRun(t, h, t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-h.opened; cancel() }()
	_, err := Run(ctx, spec, opts)
	if err != context.Canceled {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	b, _ := os.ReadFile(filepath.Join(opts.Out, RunsFile))
	if len(b) != 0 {
		t.Errorf("runs file after cancel: %q", b)
	}
	if left, _ := os.ReadDir(filepath.Join(opts.Out, "work")); len(left) != 0 {
		t.Errorf("checkouts left behind: %v", left)
	}
}

// TestRunSetup: a missing clone or commit fails before the harness is
// asked anything.
func TestRunSetup(t *testing.T) {
	spec, _ := benchspec.Load("testdata/fixture/spec.json")
	h := &fakeHarness{}
	opts := fakeRun(t, h, t.TempDir())
	opts.Repos = &Repos{Dir: t.TempDir()}
	if _, err := Run(t.Context(), spec, opts); err == nil || !strings.Contains(err.Error(), "no git clone") {
		t.Errorf("Run without a clone: %v", err)
	}
	opts = fakeRun(t, h, t.TempDir())
	spec.Tasks[0].BaseCommit = "deadbeef"
	if _, err := Run(t.Context(), spec, opts); err == nil || !strings.Contains(err.Error(), `commit "deadbeef" not found`) {
		t.Errorf("Run without the commit: %v", err)
	}
	spec.Tasks[0].BaseCommit = ""
	good := spec.Tasks[0].Verifier.TestPatch
	spec.Tasks[0].Verifier.TestPatch = strings.Replace(good, "func TestSub", "func TestMul", 2)
	if _, err := Run(t.Context(), spec, opts); err == nil || !strings.Contains(err.Error(), "task calc-add: verifier.test_patch: git apply") {
		t.Errorf("Run with a test patch that does not apply: %v", err)
	}
	spec.Tasks[0].Verifier.TestPatch = good
	opts.Proxy = "http://127.0.0.1:9"
	if _, err := Run(t.Context(), spec, opts); err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("Run without a proxy: %v", err)
	}
	if len(h.prompts) != 0 {
		t.Errorf("the harness was prompted: %q", h.prompts)
	}
}
