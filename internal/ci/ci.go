package ci

import (
	"fmt"
	"os"
	"testing"
)

// On reports whether the tests run under CI (CI non-empty).
func On() bool { return os.Getenv("CI") != "" }

// Missing ends tb for a missing prerequisite, described by format and
// args: a skip, or under CI a failure.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if On() {
		tb.Fatalf("%s (required under CI)", msg)
	} else {
		tb.Skipf("skipping: %s (under CI this fails)", msg)
	}
}
