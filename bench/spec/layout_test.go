package spec

import (
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
)

// TestSharedLayout: in the shared layout every call of a session works in
// one checkout, the harness's working directory, and no request names a
// path, the checkout or a task id; returning requests name the task by its
// issue's title.
func TestSharedLayout(t *testing.T) {
	spec, err := Demo()
	if err != nil {
		t.Fatal(err)
	}
	spec.Layout = LayoutShared
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	for i := range spec.Sessions {
		sess := &spec.Sessions[i]
		checkout := spec.Checkout(sess, sess.Focus)
		for _, id := range sess.Distractors {
			if c := spec.Checkout(sess, id); c != checkout {
				t.Fatalf("%s: task %s in %s, focus in %s", sess.ID, id, c, checkout)
			}
		}
		calls, err := spec.Calls(sess.ID, ScheduleSwitch)
		if err != nil {
			t.Fatal(err)
		}
		last := calls[len(calls)-1].Messages
		if sys := last[0].Content; !strings.Contains(sys, "Working directory: "+checkout+"\n") || !strings.Contains(sys, "Is directory a git repo: yes") {
			t.Fatalf("%s: system prompt does not open the checkout %s", sess.ID, checkout)
		}
		titled := 0
		for _, m := range last {
			if m.Role != chat.RoleUser {
				continue
			}
			for _, leak := range append([]string{checkout, "/work/ws", CheckoutPlaceholder}, append(sess.Distractors, sess.Focus)...) {
				if strings.Contains(m.Content, leak) {
					t.Fatalf("%s: request leaks %q: %.120q", sess.ID, leak, m.Content)
				}
			}
			for _, id := range append(sess.Distractors, sess.Focus) {
				task, _ := spec.Task(id)
				if strings.Contains(m.Content, Title(task)) {
					titled++
				}
			}
		}
		if titled == 0 {
			t.Fatalf("%s: no request names a task by its title", sess.ID)
		}
		for _, m := range last {
			for _, c := range m.ToolCalls {
				if strings.Contains(c.Function.Arguments, "/testbed") || strings.Contains(c.Function.Arguments, "/work/ws") {
					t.Fatalf("%s: tool call outside the shared checkout: %.120s", sess.ID, c.Function.Arguments)
				}
			}
		}
	}
	spec.Layout = "nested"
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), "layout") {
		t.Fatalf("layout nested accepted: %v", err)
	}
}

func TestTitle(t *testing.T) {
	for _, c := range []struct{ req, want string }{
		{issueRequest("django/django", "UsernameValidator allows trailing newline in usernames\nDescription\n..."), `"UsernameValidator allows trailing newline in usernames"`},
		{"In the checkout {checkout}: add a --json flag to `entire explain`.\nThen test it.", "\"add a --json flag to `entire explain`\""},
		{"## Crash on empty input:\n\nbody", `"Crash on empty input"`},
	} {
		if got := Title(&Task{ID: "x", Stages: []Stage{{Request: c.req}}}); got != c.want {
			t.Errorf("Title(%.40q) = %s, want %s", c.req, got, c.want)
		}
	}
}

// TestSharedLayoutUntitled: with Returns untitled no request of the shared
// layout quotes a task's title; returning requests say "that issue".
func TestSharedLayoutUntitled(t *testing.T) {
	spec, err := Demo()
	if err != nil {
		t.Fatal(err)
	}
	spec.Layout, spec.Returns = LayoutShared, ReturnsUntitled
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	returns := 0
	for i := range spec.Sessions {
		sess := &spec.Sessions[i]
		calls, err := spec.Calls(sess.ID, ScheduleSwitch)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range calls[len(calls)-1].Messages {
			if m.Role != chat.RoleUser {
				continue
			}
			for _, id := range append(sess.Distractors, sess.Focus) {
				task, _ := spec.Task(id)
				if strings.Contains(m.Content, Title(task)) {
					t.Fatalf("%s: request quotes %s: %.120q", sess.ID, Title(task), m.Content)
				}
			}
			if strings.Contains(m.Content, untitled) {
				returns++
			}
		}
	}
	if returns == 0 {
		t.Fatal("no returning request says " + untitled)
	}
	spec.Returns = "numbered"
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), "returns") {
		t.Fatalf("returns numbered accepted: %v", err)
	}
}
