package spec

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chattest"
)

func TestReadSWEBenchReal(t *testing.T) {
	b := chattest.ReadShared(t, "swebench-instances.jsonl")
	insts, skips := ReadSWEBench(bytes.NewReader(b), "swebench-instances.jsonl")
	if len(skips) != 0 || len(insts) != 30 {
		t.Fatalf("%d instances, skips %v; want 30 and none", len(insts), skips)
	}
	i := slices.IndexFunc(insts, func(in Instance) bool { return in.InstanceID == "django__django-11099" })
	in := insts[i]
	if len(in.FailToPass) != 3 || in.FailToPass[0] != "test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)" {
		t.Errorf("FAIL_TO_PASS = %q", in.FailToPass)
	}
	if len(in.PassToPass) == 0 {
		t.Error("PASS_TO_PASS empty")
	}
	task := in.Task()
	if !slices.Equal(task.Verifier.ChangedFiles, []string{"django/contrib/auth/validators.py"}) {
		t.Errorf("changed files = %q", task.Verifier.ChangedFiles)
	}
	if task.Verifier.TestCommand != "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 auth_tests.test_validators" {
		t.Errorf("test command = %q", task.Verifier.TestCommand)
	}
	// The tests FAIL_TO_PASS names live in the test patch, which the
	// verifier applies to the clean checkout.
	if !strings.HasPrefix(task.Verifier.TestPatch, "diff --git a/tests/auth_tests/test_validators.py") ||
		!strings.Contains(task.Verifier.TestPatch, "def test_ascii_validator") {
		t.Errorf("test patch = %.80q", task.Verifier.TestPatch)
	}
	if len(task.Stages) != 2 || !task.Stages[1].Submit { // 11099 has no hints
		t.Errorf("stages = %+v", task.Stages)
	}
	for _, in := range insts {
		task := in.Task()
		if err := task.Validate(); err != nil {
			t.Error(err)
		}
		if task.Verifier.TestCommand == "" || task.Verifier.TestPatch != in.TestPatch || in.TestPatch == "" {
			t.Errorf("%s: test command %q, test patch of %d bytes", in.InstanceID, task.Verifier.TestCommand, len(task.Verifier.TestPatch))
		}
		if (strings.TrimSpace(in.HintsText) != "") != (len(task.Stages) == 3) {
			t.Errorf("%s: %d stages with hints %q", in.InstanceID, len(task.Stages), in.HintsText[:min(20, len(in.HintsText))])
		}
	}
}

func TestReadSWEBenchSkips(t *testing.T) {
	in := strings.Join([]string{
		`{"repo":"o/r","instance_id":"x-1","base_commit":"abc","problem_statement":"p","patch":"--- a/f.py\n+++ b/f.py\n","FAIL_TO_PASS":"[\"t1\"]","PASS_TO_PASS":["t2"]}`,
		`not json`,
		`{"repo":"o/r","instance_id":"x-2","base_commit":"abc","problem_statement":"p","patch":"+++ b/f.py\n","FAIL_TO_PASS":"[oops"}`,
		`{"repo":"o/r","instance_id":"x-3","base_commit":"abc","problem_statement":"","patch":"+++ b/f.py\n"}`,
		`{"repo":"o/r","instance_id":"x-4","base_commit":"abc","problem_statement":"p","patch":"no diff"}`,
		`{"repo":"o/r","instance_id":"x-5","base_commit":"abc","problem_statement":"p","patch":"+++ b/f.py\n","test_patch":"tests"}`,
		``,
	}, "\n")
	insts, skips := ReadSWEBench(strings.NewReader(in), "t")
	if len(insts) != 1 || insts[0].InstanceID != "x-1" || !slices.Equal(insts[0].FailToPass, []string{"t1"}) || !slices.Equal(insts[0].PassToPass, []string{"t2"}) {
		t.Fatalf("instances = %+v", insts)
	}
	want := []string{"line 2: not a JSON record", "line 3: instance x-2: FAIL_TO_PASS", "line 4: instance \"x-3\": problem_statement: empty", "line 5: instance x-4: patch: no file headers",
		"line 6: instance x-5: test_patch: no file headers"}
	if len(skips) != len(want) {
		t.Fatalf("skips = %v", skips)
	}
	for i, w := range want {
		if !strings.HasPrefix(skips[i].Record+": "+skips[i].Reason, w) {
			t.Errorf("skip %d = %v, want %q", i, skips[i], w)
		}
	}
}

func TestChangedFiles(t *testing.T) {
	cases := []struct {
		name, patch string
		want        []string
	}{
		{"modify", "diff --git a/x/y.py b/x/y.py\nindex 1..2 100644\n--- a/x/y.py\n+++ b/x/y.py\n@@ -1 +1 @@\n-a\n+b\n", []string{"x/y.py"}},
		{"delete", "diff --git a/setup.py b/setup.py\ndeleted file mode 100644\n--- a/setup.py\n+++ /dev/null\n", []string{"setup.py"}},
		{"binary", "diff --git a/img.png b/img.png\nBinary files differ\ndiff --git a/z.py b/z.py\n--- a/z.py\n+++ b/z.py\n", []string{"img.png", "z.py"}},
		{"timestamp", "--- a/q.py\t2020-01-01\n+++ b/q.py\t2020-01-01\n", []string{"q.py"}},
		{"none", "hello\n", nil},
	}
	for _, c := range cases {
		if got := ChangedFiles(c.patch); !slices.Equal(got, c.want) {
			t.Errorf("%s: ChangedFiles = %q, want %q", c.name, got, c.want)
		}
	}
}

func FuzzReadSWEBench(f *testing.F) {
	if b, err := os.ReadFile("../../../shared/data/swebench-instances.jsonl"); err == nil {
		line, _, _ := bytes.Cut(b, []byte("\n"))
		f.Add(line)
	}
	f.Add([]byte(`{"repo":"o/r","instance_id":"x","base_commit":"a","problem_statement":"p","patch":"diff --git a/f b/f\n","FAIL_TO_PASS":"[]"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		insts, _ := ReadSWEBench(bytes.NewReader(b), "fuzz")
		for _, in := range insts {
			task := in.Task()
			_ = task.Validate()
		}
		_ = ChangedFiles(string(b))
	})
}
