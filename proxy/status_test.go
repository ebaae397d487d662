package proxy

import (
	"net/http"
	"testing"

	"github.com/rcm-dev/rcm/memory"
)

// TestClientOf: each harness is named by the header that names its
// session, else by its User-Agent.
func TestClientOf(t *testing.T) {
	for _, c := range []struct {
		h    http.Header
		want string
	}{
		{http.Header{"X-Session-Id": {"ses_1"}, "User-Agent": {"ai-sdk/openai-compatible"}}, ClientOpenCode},
		{http.Header{"X-Claude-Code-Session-Id": {"2f1a"}, "User-Agent": {"claude-cli/2.1.332 (external, cli)"}}, ClientClaudeCode},
		{http.Header{"User-Agent": {"claude-cli/2.1.332"}}, ClientClaudeCode},
		{http.Header{"Session-Id": {"0199"}, "Originator": {"codex_exec"}}, ClientCodex},
		{http.Header{"User-Agent": {"codex_cli_rs/0.171.0"}}, ClientCodex},
		{http.Header{"User-Agent": {"curl/8"}}, ""},
	} {
		if got := clientOf(c.h); got != c.want {
			t.Errorf("clientOf(%v) = %q, want %q", c.h, got, c.want)
		}
	}
}

// TestTaskTitle: a task is titled by its name, unless an older rcm named
// it by its id; then by its record's first request, its first line.
func TestTaskTitle(t *testing.T) {
	rec := memory.Record{Requirements: []memory.Requirement{{Text: "Fix the parser\nIt fails on empty input"}}}
	for _, c := range []struct {
		task memory.Task
		rec  memory.Record
		want string
	}{
		{memory.Task{ID: "t1", Name: "Add the validator test"}, rec, "Add the validator test"},
		{memory.Task{ID: "t1", Name: "t1"}, rec, "Fix the parser"},
		{memory.Task{ID: "t1"}, memory.Record{}, ""},
	} {
		if got := TaskTitle(c.task, c.rec); got != c.want {
			t.Errorf("TaskTitle(%+v) = %q, want %q", c.task, got, c.want)
		}
	}
}
