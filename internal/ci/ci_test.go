package ci

import (
	"fmt"
	"testing"
)

// TestOn: any non-empty CI counts, not only CI=true.
func TestOn(t *testing.T) {
	for v, want := range map[string]bool{"": false, "true": true, "1": true, "True": true, "woodpecker": true} {
		t.Setenv("CI", v)
		if On() != want {
			t.Errorf("CI=%q: On() = %v, want %v", v, !want, want)
		}
	}
}

// ended notes how Missing ended a test.
type ended struct {
	testing.TB
	how string
}

func (e *ended) Helper()                      {}
func (e *ended) Fatalf(f string, args ...any) { e.how = "fail: " + fmt.Sprintf(f, args...) }
func (e *ended) Skipf(f string, args ...any)  { e.how = "skip: " + fmt.Sprintf(f, args...) }

func TestMissing(t *testing.T) {
	for v, want := range map[string]string{"": "skip: skipping: no chromium (under CI this fails)", "1": "fail: no chromium (required under CI)"} {
		t.Setenv("CI", v)
		e := &ended{TB: t}
		Missing(e, "no %s", "chromium")
		if e.how != want {
			t.Errorf("CI=%q: %q, want %q", v, e.how, want)
		}
	}
}
