package spec

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/rcm-dev/rcm/bench/trajectory"
)

// Instance is a SWE-bench task record.
type Instance struct {
	Repo             string   `json:"repo"`
	InstanceID       string   `json:"instance_id"`
	BaseCommit       string   `json:"base_commit"`
	Patch            string   `json:"patch"`
	TestPatch        string   `json:"test_patch"`
	ProblemStatement string   `json:"problem_statement"`
	HintsText        string   `json:"hints_text"`
	Version          string   `json:"version"`
	FailToPass       []string `json:"-"`
	PassToPass       []string `json:"-"`
}

// maxLine bounds one JSONL record (SWE-bench records with large patches run
// to a few hundred KB).
const maxLine = 64 << 20

// ReadSWEBench reads SWE-bench instance JSONL: one record a line, whose
// FAIL_TO_PASS and PASS_TO_PASS are JSON arrays encoded as strings (plain
// arrays are accepted too). Records that do not parse or lack an id, repo,
// base commit, problem statement or patch are skipped and reported.
func ReadSWEBench(r io.Reader, source string) ([]Instance, []trajectory.Skip) {
	var out []Instance
	var skips []trajectory.Skip
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		rec := fmt.Sprintf("line %d", n)
		inst, err := parseInstance([]byte(line))
		if err != nil {
			skips = append(skips, trajectory.Skip{Source: source, Record: rec, Reason: err.Error()})
			continue
		}
		out = append(out, inst)
	}
	if err := sc.Err(); err != nil {
		skips = append(skips, trajectory.Skip{Source: source, Record: fmt.Sprintf("line %d", n+1), Reason: err.Error()})
	}
	return out, skips
}

func parseInstance(b []byte) (Instance, error) {
	var raw struct {
		Instance
		F2P json.RawMessage `json:"FAIL_TO_PASS"`
		P2P json.RawMessage `json:"PASS_TO_PASS"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return Instance{}, fmt.Errorf("not a JSON record: %w", err)
	}
	inst := raw.Instance
	for _, f := range []struct{ name, v string }{
		{"instance_id", inst.InstanceID}, {"repo", inst.Repo}, {"base_commit", inst.BaseCommit},
		{"problem_statement", inst.ProblemStatement}, {"patch", inst.Patch},
	} {
		if strings.TrimSpace(f.v) == "" {
			return Instance{}, fmt.Errorf("instance %q: %s: empty", inst.InstanceID, f.name)
		}
	}
	var err error
	if inst.FailToPass, err = testList(raw.F2P); err != nil {
		return Instance{}, fmt.Errorf("instance %s: FAIL_TO_PASS: %w", inst.InstanceID, err)
	}
	if inst.PassToPass, err = testList(raw.P2P); err != nil {
		return Instance{}, fmt.Errorf("instance %s: PASS_TO_PASS: %w", inst.InstanceID, err)
	}
	if len(ChangedFiles(inst.Patch)) == 0 {
		return Instance{}, fmt.Errorf("instance %s: patch: no file headers", inst.InstanceID)
	}
	if strings.TrimSpace(inst.TestPatch) != "" && len(ChangedFiles(inst.TestPatch)) == 0 {
		return Instance{}, fmt.Errorf("instance %s: test_patch: no file headers", inst.InstanceID)
	}
	return inst, nil
}

// testList decodes a test list given as a JSON array or as a string holding
// one; absent means empty.
func testList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("not a list of test names: %w", err)
	}
	return list, nil
}

// ChangedFiles returns the files a unified git diff changes, in order, from
// its "+++ b/" lines ("--- a/" for deletions) or, failing those, its
// "diff --git" headers.
func ChangedFiles(patch string) []string {
	var files []string
	add := func(f string) {
		if f != "" && !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	var header, minus string
	for line := range strings.Lines(patch) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "diff --git "):
			add(header)
			header = gitHeaderPath(strings.TrimPrefix(line, "diff --git "))
			minus = ""
		case strings.HasPrefix(line, "--- "):
			minus = strings.TrimPrefix(diffPath(line[4:]), "a/")
		case strings.HasPrefix(line, "+++ "):
			p := diffPath(line[4:])
			if p == "/dev/null" {
				p = minus
			} else {
				p = strings.TrimPrefix(p, "b/")
			}
			add(p)
			header = ""
		}
	}
	add(header)
	return files
}

// diffPath drops a trailing tab-separated timestamp.
func diffPath(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// gitHeaderPath reads "a/X b/X" (same path both sides: a binary file or a
// mode change has no ---/+++ lines).
func gitHeaderPath(s string) string {
	if !strings.HasPrefix(s, "a/") || len(s)%2 == 0 {
		return ""
	}
	half := (len(s) - 1) / 2
	a, b := s[:half], s[half+1:]
	if s[half] != ' ' || !strings.HasPrefix(b, "b/") || a[2:] != b[2:] {
		return ""
	}
	return b[2:]
}

// TestCommand returns the command that runs a task's tests as the SWE-bench
// harness does for the repository, or "" for repositories it does not know:
// Django's runtests.py with the test modules of the test patch, SymPy's
// bin/test with its test files.
func TestCommand(repo, testPatch string) string {
	files := ChangedFiles(testPatch)
	switch repo {
	case "django/django":
		var labels []string
		for _, f := range files {
			if !strings.HasPrefix(f, "tests/") || path.Ext(f) != ".py" {
				continue
			}
			labels = append(labels, strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(f, "tests/"), ".py"), "/", "."))
		}
		return strings.TrimSpace("./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 " + strings.Join(labels, " "))
	case "sympy/sympy":
		var tests []string
		for _, f := range files {
			if path.Ext(f) == ".py" {
				tests = append(tests, f)
			}
		}
		return strings.TrimSpace("bin/test -C --verbose " + strings.Join(tests, " "))
	}
	return ""
}

// Task returns the instance as a task without a recorded trajectory: the
// issue as its first request, the hints (if any) as a second, a submit
// request last (see Stages).
func (inst Instance) Task() Task {
	t := Task{
		ID:         inst.InstanceID,
		Repository: inst.Repo,
		BaseCommit: inst.BaseCommit,
		Source:     "swe-bench",
		Verifier: Verifier{
			FailToPass:   inst.FailToPass,
			PassToPass:   inst.PassToPass,
			TestCommand:  TestCommand(inst.Repo, inst.TestPatch),
			ChangedFiles: ChangedFiles(inst.Patch),
			TestPatch:    inst.TestPatch,
		},
	}
	t.Stages = append(t.Stages, Stage{Request: issueRequest(inst.Repo, inst.ProblemStatement)})
	if h := strings.TrimSpace(inst.HintsText); h != "" {
		t.Stages = append(t.Stages, Stage{Request: HintsRequest(h)})
	}
	t.Stages = append(t.Stages, Stage{Request: submitRequest(t.ID), Submit: true})
	return t
}

// issueRequest is a task's first request: the issue, naming the checkout.
func issueRequest(repo, issue string) string {
	return fmt.Sprintf("In the checkout %s (%s), fix this issue:\n\n%s", CheckoutPlaceholder, repo, strings.TrimSpace(issue))
}

// HintsRequest is a later request carrying the issue thread's hints.
func HintsRequest(hints string) string {
	return fmt.Sprintf("More context on the issue in %s, from its discussion:\n\n%s", CheckoutPlaceholder, strings.TrimSpace(hints))
}

// submitRequest is a task's final request (A_submit).
func submitRequest(task string) string {
	return fmt.Sprintf("Submit: make sure the fix for %s in %s is complete and the tests pass.", task, CheckoutPlaceholder)
}
