package router

import "testing"

// TestSubject: a task's subject is its first line of three words that is
// not a line introducing the text below it.
func TestSubject(t *testing.T) {
	for in, want := range map[string]string{
		"Please fix this issue:\n\nUsernameValidator allows trailing newline\nmore":                            "UsernameValidator allows trailing newline",
		"More context on that issue, from the issue's discussion:\n\nThe regex should use \\A and \\Z anchors": "The regex should use \\A and \\Z anchors",
		"add a --json flag to explain": "add a --json flag to explain",
	} {
		if got := subject(in); got != want {
			t.Errorf("subject(%.40q) = %q, want %q", in, got, want)
		}
	}
}
