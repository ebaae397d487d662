package main

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/proxy"
)

// claudeStatus is the JSON Claude Code passes a statusLine command on
// stdin, as its documentation shows it, for session id.
func claudeStatus(id string) string {
	return `{"hook_event_name":"Status","session_id":"` + id + `","transcript_path":"/home/u/.claude/projects/-work/` + id + `.jsonl",` +
		`"cwd":"/work/ws2","model":{"id":"claude-opus-4-1","display_name":"Opus"},"workspace":{"current_dir":"/work/ws2","project_dir":"/work"},` +
		`"version":"1.0.80","output_style":{"name":"default"},"cost":{"total_cost_usd":0.01234,"total_duration_ms":45000,` +
		`"total_api_duration_ms":2300,"total_lines_added":156,"total_lines_removed":23},"exceeds_200k_tokens":false}`
}

// TestStatusline runs `rcm statusline` as Claude Code would, with its
// stdin JSON, against a running rcm that has seen a two-task session: it
// prints the current task's title and id, its confidence, the open tasks
// and the share of context the last call saved, quickly. An unknown
// session and a proxy that is down print nothing and exit 0.
func TestStatusline(t *testing.T) {
	srv := newInspected(t)
	const id = "2f1a6c0e-8b7d-4c7e-9a57-3c5e1d2b4f60"
	send(t, srv.URL, id, inspectMsgs[:2]...)
	send(t, srv.URL, id, inspectMsgs...)
	var out []byte
	for i := 0; i < 50 && !bytes.Contains(out, []byte("2 open tasks")); i++ {
		cmd := command("statusline", "--addr", srv.URL)
		cmd.Stdin = strings.NewReader(claudeStatus(id))
		var err error
		if out, err = cmd.Output(); err != nil {
			t.Fatalf("statusline: %v", err)
		}
	}
	line := string(out)
	if !strings.HasPrefix(line, `rcm t2 "In /work/ws2 add the validator test" · `) || !strings.HasSuffix(line, " · 2 open tasks · saved 41%\n") {
		t.Fatalf("status line %q", line)
	}
	// In process, the same line (a loaded machine may take longer than
	// the 200 ms rcm allows; Claude Code asks again at its next refresh,
	// and so does this). How long it takes is BenchmarkStatusline's.
	var b bytes.Buffer
	for i := 0; i < 50 && b.Len() == 0; i++ {
		if err := statusline([]string{"--addr", srv.URL}, strings.NewReader(claudeStatus(id)), &b); err != nil {
			t.Fatalf("in process: %v", err)
		}
	}
	if b.String() != line {
		t.Fatalf("in process: %q, want %q", b.String(), line)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	for _, c := range []struct{ name, addr, stdin string }{
		{"unknown session", srv.URL, claudeStatus("ses_other")},
		{"rcm down", down, claudeStatus(id)},
		{"not Claude Code's JSON", srv.URL, "hello"},
	} {
		cmd := command("statusline", "--addr", c.addr)
		cmd.Stdin = strings.NewReader(c.stdin)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
			t.Errorf("%s: %v %q, want no output and exit 0", c.name, err, out)
		}
	}
}

// TestStatusText: a call that fell back shows "full history" instead of
// its confidence.
func TestStatusText(t *testing.T) {
	for _, c := range []struct {
		st   proxy.Status
		want string
	}{
		{proxy.Status{Task: "t1", Title: "Fix the login", Confidence: 0.93, Fallback: "none", Tasks: 3, Saved: 0.412}, `rcm t1 "Fix the login" · 0.93 · 3 open tasks · saved 41%`},
		{proxy.Status{Task: "t2", Confidence: 0.4, Fallback: "threshold", Tasks: 1}, `rcm t2 · full history · 1 open task · saved 0%`},
		{proxy.Status{}, `rcm: no task yet · 0 open tasks · saved 0%`},
	} {
		if got := statusText(c.st); got != c.want {
			t.Errorf("statusText(%+v) = %q, want %q", c.st, got, c.want)
		}
	}
}

// BenchmarkStatusline: one status line, in process, against a running rcm
// that has seen a two-task session (Claude Code refreshes every 300 ms at
// most; the question, the process start aside, should take a fraction).
func BenchmarkStatusline(b *testing.B) {
	srv := newInspected(b)
	const id = "2f1a6c0e-8b7d-4c7e-9a57-3c5e1d2b4f60"
	send(b, srv.URL, id, inspectMsgs...)
	var out bytes.Buffer
	for i := 0; i < 50 && out.Len() == 0; i++ { // the call's writes land after its answer
		statusline([]string{"--addr", srv.URL}, strings.NewReader(claudeStatus(id)), &out)
	}
	for b.Loop() {
		out.Reset()
		if err := statusline([]string{"--addr", srv.URL}, strings.NewReader(claudeStatus(id)), &out); err != nil {
			b.Fatal(err)
		}
	}
	if out.Len() == 0 {
		b.Fatal("no status line")
	}
}
