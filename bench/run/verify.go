package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/rcm-dev/rcm/bench/spec"
)

// Test outcomes as the verifier reads them from a test command's output.
const (
	testPassed = "passed"
	testFailed = "failed"
)

// testLine patterns of the runners SWE-bench style verifiers use, each
// capturing the test's name and its status word.
var testLines = []struct {
	re         *regexp.Regexp
	name, stat int
}{
	// go test -v: "--- PASS: TestAdd (0.00s)", subtests indented.
	{regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+)`), 2, 1},
	// pytest -rA summary: "PASSED tests/test_x.py::test_y[a b]", "FAILED x::y - msg".
	{regexp.MustCompile(`^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (\S+(?:\[[^\]]*\])?)`), 2, 1},
	// pytest -v: "tests/test_x.py::test_y PASSED [ 10%]".
	{regexp.MustCompile(`^(\S+::\S+(?:\[[^\]]*\])?) (PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)`), 1, 2},
	// unittest / Django verbose: "test_x (mod.Class) ... ok", "... FAIL", "... ERROR".
	{regexp.MustCompile(`^(\S+ \([\w.]+\))(?: \S.*?)? \.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)`), 1, 2},
	// SymPy bin/test: "test_x ok", "test_x F", "test_x E".
	{regexp.MustCompile(`^(test_\w+) (ok|F|E|f|X|s|w)$`), 1, 2},
}

// passWords are the status words that count as a pass. Expected failures
// count, as SWE-bench counts them; skips do not.
var passWords = map[string]bool{"PASS": true, "PASSED": true, "ok": true, "XFAIL": true, "expected failure": true, "f": true}

// parseTests reads per-test outcomes from a test command's output: name ->
// testPassed or testFailed. A test reported more than once takes its worst
// outcome (a flaky rerun does not hide a failure).
func parseTests(out []byte) map[string]string {
	res := map[string]string{}
	for line := range strings.SplitSeq(string(out), "\n") {
		line = strings.TrimRight(line, "\r")
		for _, p := range testLines {
			m := p.re.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			name, st := m[p.name], m[p.stat]
			if st == "SKIP" || st == "SKIPPED" || st == "skipped" || st == "s" {
				break
			}
			if passWords[st] && res[name] != testFailed {
				res[name] = testPassed
			} else if !passWords[st] {
				res[name] = testFailed
			}
			break
		}
	}
	return res
}

// VerifyTimeout bounds a test command when Verify is given none.
const VerifyTimeout = 30 * time.Minute

// ErrTestPatch marks a task whose test patch does not apply to the clean
// checkout: a broken spec or base commit, not a patch that failed.
var ErrTestPatch = errors.New("the test patch does not apply")

// Verify scores patch, a model's final diff, on the clean checkout, as
// SWE-bench does: the patch is applied, then the verifier's test patch (the
// tests the task's fix is judged by), then the test command runs (sh -c, in
// the checkout). The model may not change what the tests are: the file
// parts of patch that touch a file the test patch names are left out before
// it is applied (Score.Stripped lists them), so the test patch always
// applies over the base commit's test files. The task is resolved only
// when the patch applies and every FAIL_TO_PASS and PASS_TO_PASS test
// passed; with no tests listed, the command's exit status decides.
//
// A patch that does not apply is unresolved. A test patch that does not
// apply is an error wrapping ErrTestPatch: nothing can be judged. Verify
// returns the score and the command's output.
func Verify(ctx context.Context, clean *Checkout, patch []byte, v spec.Verifier, timeout time.Duration) (Score, []byte, error) {
	s := Score{PatchBytes: len(patch), ExitCode: -1,
		FailToPass: TestTally{Total: len(v.FailToPass)}, PassToPass: TestTally{Total: len(v.PassToPass)}}
	if v.TestPatch != "" {
		kept, stripped := spec.StripFiles(string(patch), spec.PatchPaths(v.TestPatch))
		patch, s.Stripped = []byte(kept), stripped
	}
	if err := clean.Apply(ctx, patch); err != nil {
		s.Problem = "patch does not apply: " + err.Error()
		s.Failed = append(append(s.Failed, v.FailToPass...), v.PassToPass...)
		return s, nil, nil
	}
	s.Applied = true
	if err := clean.Apply(ctx, []byte(v.TestPatch)); err != nil {
		return s, nil, fmt.Errorf("bench: verify in %s: %w: %w", clean.Dir, ErrTestPatch, err)
	}
	if v.TestCommand == "" {
		s.Problem = "no test command"
		return s, nil, nil
	}
	if timeout <= 0 {
		timeout = VerifyTimeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, "sh", "-c", v.TestCommand)
	cmd.Dir = clean.Dir
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		s.ExitCode = 0
	case tctx.Err() != nil:
		s.Problem = fmt.Sprintf("test command stopped after %v", timeout)
	case errors.As(err, &exit):
		s.ExitCode = exit.ExitCode()
	default:
		s.Problem = "test command: " + err.Error()
	}
	got := parseTests(out.Bytes())
	tally := func(names []string, t *TestTally) {
		for _, n := range names {
			if got[n] == testPassed {
				t.Passed++
			} else {
				s.Failed = append(s.Failed, n)
			}
		}
	}
	tally(v.FailToPass, &s.FailToPass)
	tally(v.PassToPass, &s.PassToPass)
	if s.FailToPass.Total+s.PassToPass.Total == 0 {
		s.Resolved = s.ExitCode == 0 && s.Problem == ""
	} else {
		s.Resolved = len(s.Failed) == 0 && s.Problem == ""
	}
	return s, out.Bytes(), nil
}
