package bench

import (
	"maps"
	"testing"
)

func TestParseTests(t *testing.T) {
	cases := []struct {
		name, out string
		want      map[string]string
	}{
		{"go test -v", "=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\n    x_test.go:7: bad\n--- PASS: TestSub (0.00s)\n    --- PASS: TestSub/neg (0.00s)\n--- SKIP: TestSkip (0.00s)\n",
			map[string]string{"TestAdd": TestFailed, "TestSub": TestPassed, "TestSub/neg": TestPassed}},
		{"pytest -rA", "PASSED tests/test_a.py::test_x[1-2]\nFAILED tests/test_a.py::test_y - AssertionError: no\nERROR tests/test_b.py::test_z\nSKIPPED [1] tests/x.py:3: skip\n",
			map[string]string{"tests/test_a.py::test_x[1-2]": TestPassed, "tests/test_a.py::test_y": TestFailed, "tests/test_b.py::test_z": TestFailed}},
		{"pytest -v", "tests/test_a.py::test_x PASSED                 [ 50%]\ntests/test_a.py::test_y FAILED  [100%]\n",
			map[string]string{"tests/test_a.py::test_x": TestPassed, "tests/test_a.py::test_y": TestFailed}},
		{"django", "test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests) ... ok\ntest_b (m.C) ... FAIL\ntest_c (m.C)\nDocstring here ... ERROR\ntest_d (m.C) ... skipped 'no db'\n",
			map[string]string{"test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)": TestPassed, "test_b (m.C)": TestFailed}},
		{"sympy", "test_one ok\ntest_two F\ntest_three E\n", map[string]string{"test_one": TestPassed, "test_two": TestFailed, "test_three": TestFailed}},
		{"worst outcome wins", "--- FAIL: TestA (0.00s)\n--- PASS: TestA (0.00s)\n", map[string]string{"TestA": TestFailed}},
	}
	for _, c := range cases {
		if got := ParseTests([]byte(c.out)); !maps.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func FuzzParseTests(f *testing.F) {
	f.Add([]byte("--- PASS: TestA (0.00s)\nPASSED a::b\ntest_x (a.B) ... ok\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for name, st := range ParseTests(b) {
			if name == "" || (st != TestPassed && st != TestFailed) {
				t.Fatalf("%q: %q", name, st)
			}
		}
	})
}

// TestVerify scores patches on a clean checkout of the fixture: the fix
// resolves, a fix that breaks a PASS_TO_PASS test does not, a patch that
// does not apply does not.
func TestVerify(t *testing.T) {
	spec, _ := Load("testdata/fixture/spec.json")
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
	if err := replaceIn(edit.Dir+"/calc/add.go", "a - b", "a + b"); err != nil {
		t.Fatal(err)
	}
	fix, err := edit.Diff(t.Context())
	if err != nil || len(fix) == 0 {
		t.Fatalf("diff: %q, %v", fix, err)
	}
	replaceIn(edit.Dir+"/calc/sub.go", "a - b", "b - a")
	breaks, _ := edit.Diff(t.Context())
	cases := []struct {
		name     string
		patch    []byte
		resolved bool
		failed   int
	}{
		{"fix", fix, true, 0},
		{"breaks sub", breaks, false, 1},
		{"empty", nil, false, 1},
		{"does not apply", []byte("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-no\n+yes\n"), false, 3},
	}
	for i, c := range cases {
		clean, err := repos.Add(t.Context(), "fixture/calc", commit, work+"/clean"+string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		s, _ := Verify(t.Context(), clean, c.patch, v, 0)
		if s.Resolved != c.resolved || len(s.Failed) != c.failed {
			t.Errorf("%s: %+v", c.name, s)
		}
	}
}
