package run

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	benchspec "github.com/rcm-dev/rcm/bench/spec"
)

func TestParseTests(t *testing.T) {
	cases := []struct {
		name, out string
		want      map[string]string
	}{
		{"go test -v", "=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\n    x_test.go:7: bad\n--- PASS: TestSub (0.00s)\n    --- PASS: TestSub/neg (0.00s)\n--- SKIP: TestSkip (0.00s)\n",
			map[string]string{"TestAdd": testFailed, "TestSub": testPassed, "TestSub/neg": testPassed}},
		{"pytest -rA", "PASSED tests/test_a.py::test_x[1-2]\nFAILED tests/test_a.py::test_y - AssertionError: no\nERROR tests/test_b.py::test_z\nSKIPPED [1] tests/x.py:3: skip\n",
			map[string]string{"tests/test_a.py::test_x[1-2]": testPassed, "tests/test_a.py::test_y": testFailed, "tests/test_b.py::test_z": testFailed}},
		{"pytest -v", "tests/test_a.py::test_x PASSED                 [ 50%]\ntests/test_a.py::test_y FAILED  [100%]\n",
			map[string]string{"tests/test_a.py::test_x": testPassed, "tests/test_a.py::test_y": testFailed}},
		{"django", "test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests) ... ok\ntest_b (m.C) ... FAIL\ntest_c (m.C)\nDocstring here ... ERROR\ntest_d (m.C) ... skipped 'no db'\n",
			map[string]string{"test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)": testPassed, "test_b (m.C)": testFailed}},
		{"sympy", "test_one ok\ntest_two F\ntest_three E\n", map[string]string{"test_one": testPassed, "test_two": testFailed, "test_three": testFailed}},
		{"worst outcome wins", "--- FAIL: TestA (0.00s)\n--- PASS: TestA (0.00s)\n", map[string]string{"TestA": testFailed}},
	}
	for _, c := range cases {
		if got := parseTests([]byte(c.out)); !maps.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func FuzzParseTests(f *testing.F) {
	f.Add([]byte("--- PASS: TestA (0.00s)\nPASSED a::b\ntest_x (a.B) ... ok\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for name, st := range parseTests(b) {
			if name == "" || (st != testPassed && st != testFailed) {
				t.Fatalf("%q: %q", name, st)
			}
		}
	})
}

// TestVerify scores patches on a clean checkout of the fixture, with its
// test patch (TestAddNegative lives only there): the fix resolves, a fix
// that breaks a PASS_TO_PASS test does not, a patch that does not apply
// does not, and a patch that edits the test patch's file has that part
// left out (a model cannot change the tests it is judged by).
func TestVerify(t *testing.T) {
	spec, _ := benchspec.Load("testdata/fixture/spec.json")
	v := spec.Tasks[0].Verifier
	repos := &Repos{Dir: fixtureClone(t)}
	commit, err := repos.Commit(t.Context(), "fixture/calc", "")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	edit, err := repos.Add(t.Context(), "fixture/calc", commit, work+"/edit")
	if err != nil {
		t.Fatal(err)
	}
	diff := func() []byte {
		t.Helper()
		b, err := edit.Diff(t.Context())
		if err != nil || len(b) == 0 {
			t.Fatalf("diff: %q, %v", b, err)
		}
		return b
	}
	replaceIn(edit.Dir+"/calc/add.go", "a - b", "a + b")
	fix := diff()
	// The fix, and an edit of the tests where the test patch changes them.
	replaceIn(edit.Dir+"/calc/calc_test.go", "func TestSub", "// Sub.\nfunc TestSub")
	fixTests := diff()
	// No fix; TestAdd rewritten to pass on the bug.
	replaceIn(edit.Dir+"/calc/add.go", "a + b", "a - b")
	replaceIn(edit.Dir+"/calc/calc_test.go", "got != 5", "got != -1")
	cheat := diff()
	replaceIn(edit.Dir+"/calc/calc_test.go", "got != -1", "got != 5")
	replaceIn(edit.Dir+"/calc/add.go", "a - b", "a + b")
	replaceIn(edit.Dir+"/calc/sub.go", "a - b", "b - a")
	breaks := diff()
	cases := []struct {
		name     string
		patch    []byte
		resolved bool
		f2p      int // FAIL_TO_PASS passed
		failed   int
		stripped []string
	}{
		{"fix", fix, true, 2, 0, nil},
		{"fix, tests edited", fixTests, true, 2, 0, []string{"calc/calc_test.go"}},
		{"cheat", cheat, false, 0, 2, []string{"calc/calc_test.go"}},
		{"breaks sub", breaks, false, 2, 1, []string{"calc/calc_test.go"}},
		{"empty", nil, false, 0, 2, nil},
		{"does not apply", []byte("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-no\n+yes\n"), false, 0, 4, nil},
	}
	for i, c := range cases {
		clean, err := repos.Add(t.Context(), "fixture/calc", commit, work+"/clean"+string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		s, _, err := Verify(t.Context(), clean, c.patch, v, 0)
		if err != nil || s.Resolved != c.resolved || s.FailToPass.Passed != c.f2p || len(s.Failed) != c.failed || !slices.Equal(s.Stripped, c.stripped) {
			t.Errorf("%s: %+v, %v", c.name, s, err)
		}
	}

	// A test patch that does not apply is an error, not an unresolved task;
	// the runner's setup check finds it without a checkout.
	bad := v
	bad.TestPatch = strings.Replace(v.TestPatch, "func TestSub", "func TestMul", 2)
	clean, _ := repos.Add(t.Context(), "fixture/calc", commit, work+"/bad")
	if s, _, err := Verify(t.Context(), clean, fix, bad, 0); !errors.Is(err, ErrTestPatch) || s.Resolved {
		t.Errorf("broken test patch: %+v, %v; want ErrTestPatch", s, err)
	}
	if err := repos.CheckPatch(t.Context(), "fixture/calc", commit, []byte(bad.TestPatch)); err == nil {
		t.Error("CheckPatch accepted a test patch that does not apply")
	}
	if err := repos.CheckPatch(t.Context(), "fixture/calc", commit, []byte(v.TestPatch)); err != nil {
		t.Errorf("CheckPatch: %v", err)
	}
}

func TestStripFiles(t *testing.T) {
	mod := "diff --git a/src/a.go b/src/a.go\nindex 1..2 100644\n--- a/src/a.go\n+++ b/src/a.go\n@@ -1 +1 @@\n-a\n+b\n"
	test := "diff --git a/src/a_test.go b/src/a_test.go\n--- a/src/a_test.go\n+++ b/src/a_test.go\n@@ -1 +1 @@\n-x\n+y\n"
	added := "diff --git a/new_test.go b/new_test.go\nnew file mode 100644\n--- /dev/null\n+++ b/new_test.go\n@@ -0,0 +1 @@\n+z\n"
	gone := "diff --git a/old_test.go b/old_test.go\ndeleted file mode 100644\n--- a/old_test.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-z\n"
	moved := "diff --git a/t/x_test.go b/t/y.go\nsimilarity index 100%\nrename from t/x_test.go\nrename to t/y.go\n"
	bin := "diff --git a/img.png b/img.png\nGIT binary patch\nliteral 1\nIcmZ?d00001\n\n"
	cases := []struct {
		name, patch string
		files       []string
		kept        string
		stripped    []string
	}{
		{"nothing to strip", mod + test, []string{"other.go"}, mod + test, nil},
		{"modified test", mod + test + bin, []string{"src/a_test.go"}, mod + bin, []string{"src/a_test.go"}},
		{"added and deleted", added + mod + gone, []string{"new_test.go", "old_test.go"}, mod, []string{"new_test.go", "old_test.go"}},
		{"renamed away", moved + mod, []string{"t/x_test.go"}, mod, []string{"t/x_test.go"}},
		{"binary", bin, []string{"img.png"}, "", []string{"img.png"}},
		{"head kept", "From: x\n\n" + test, []string{"src/a_test.go"}, "From: x\n\n", []string{"src/a_test.go"}},
		{"empty", "", []string{"a"}, "", nil},
	}
	for _, c := range cases {
		kept, stripped := benchspec.StripFiles(c.patch, c.files)
		if kept != c.kept || !slices.Equal(stripped, c.stripped) {
			t.Errorf("%s: kept %q, stripped %q; want %q, %q", c.name, kept, stripped, c.kept, c.stripped)
		}
	}
}

func FuzzStripFiles(f *testing.F) {
	f.Add("diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-a\n+b\n", "a")
	f.Fuzz(func(t *testing.T, patch, file string) {
		kept, stripped := benchspec.StripFiles(patch, []string{file})
		if len(stripped) == 0 && kept != patch {
			t.Fatalf("nothing stripped but the patch changed: %q -> %q", patch, kept)
		}
		if len(kept) > len(patch) {
			t.Fatalf("kept more than the patch: %q", kept)
		}
	})
}
