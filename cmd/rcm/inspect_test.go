package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/proxytest"
	"github.com/rcm-dev/rcm/internal/scripted"
	"github.com/rcm-dev/rcm/proxy"
)

// newInspected serves rcm, in rcm mode, before a scripted upstream.
func newInspected(t testing.TB) *httptest.Server {
	return proxytest.Serve(t, scripted.New(scripted.Script{Default: scripted.Reply{Text: "done"}}))
}

var inspectMsgs = []string{
	`{"role":"system","content":"You are opencode."}`,
	`{"role":"user","content":"In /work/ws1 fix the compiler crash"}`,
	`{"role":"assistant","content":"done"}`,
	`{"role":"user","content":"In /work/ws2 add the validator test"}`,
}

// send posts one streamed call of session with msgs.
func send(t testing.TB, base, session string, msgs ...string) {
	t.Helper()
	proxytest.Send(t, base+"/v1/chat/completions", session, `{"model":"m","stream":true,"messages":[`+strings.Join(msgs, ",")+`]}`)
}

// TestInspect runs `rcm inspect` against a live proxy that has seen a
// two-task session in rcm mode.
func TestInspect(t *testing.T) {
	srv := newInspected(t)
	send(t, srv.URL, "ses_inspect", inspectMsgs[:2]...)
	send(t, srv.URL, "ses_inspect", inspectMsgs...)
	var err error
	// The records are written after the responses; the proxy serves the
	// inspector from the same store, so poll through the command itself.
	// Flags go after the session here and before it below.
	var out []byte
	for i := 0; i < 50; i++ {
		out, err = command("inspect", "ses_inspect", "--addr", srv.URL).Output()
		if err == nil && bytes.Contains(out, []byte("validator test")) {
			break
		}
	}
	if err != nil {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	for _, want := range []string{"session ses_inspect: 2 calls, 2 tasks", "== task t1 (turns: 1,", "fix the compiler crash", "== task t2 (turns: 1,", "routing decisions", "1.00  new        none", "0.95  workspace  none"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	// The cached-prefix share: unknown for the first call, then a share.
	if !regexp.MustCompile(`(?m)>\d+\s+-\n.*>\d+\s+\d+%\n`).Match(out) {
		t.Errorf("decisions lack the cached-prefix share column:\n%s", out)
	}
	// An address without a scheme, flags first.
	hostport := strings.TrimPrefix(srv.URL, "http://")
	if again, err := command("inspect", "--addr", hostport, "ses_inspect").Output(); err != nil || !bytes.Equal(again, out) {
		t.Fatalf("--addr %s before the session: %v\n%s", hostport, err, again)
	}
	// --json: the proxy's JSON, with each task's turns.
	js, err := command("inspect", "--json", "--addr", hostport, "ses_inspect").Output()
	var v proxy.SessionView
	if err != nil || json.Unmarshal(js, &v) != nil || len(v.Tasks) != 2 || v.Tasks[0].Turns != 1 || v.Tasks[1].Turns != 1 || len(v.Events) != 2 {
		t.Fatalf("--json: %v\n%s", err, js)
	}
	out, err = command("inspect", "--addr", srv.URL).Output()
	if err != nil || !bytes.Contains(out, []byte("ses_inspect")) {
		t.Fatalf("session list: %v\n%s", err, out)
	}
	js, err = command("inspect", "--addr="+hostport, "--json", "--limit", "1").Output()
	if err != nil || !bytes.HasPrefix(bytes.TrimSpace(js), []byte(`[`)) || !bytes.Contains(js, []byte(`"id": "ses_inspect"`)) {
		t.Fatalf("session list --json: %v\n%s", err, js)
	}
	out, err = command("inspect", "nope", "--addr", srv.URL).CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte(`no session "nope"`)) {
		t.Fatalf("unknown session: %v\n%s", err, out)
	}
}

// TestInspectPages lists sessions a page at a time, following the cursor
// the command prints.
func TestInspectPages(t *testing.T) {
	srv := newInspected(t)
	for _, id := range []string{"ses_a", "ses_b", "ses_c"} {
		send(t, srv.URL, id, `{"role":"user","content":"In /work/ws1 fix the compiler crash"}`)
	}
	// Sessions are stored after their answers: wait for the three.
	for i := 0; ; i++ {
		js, err := command("inspect", "--json", "--addr", srv.URL).Output()
		if err == nil && bytes.Count(js, []byte(`"id"`)) == 3 {
			break
		}
		if i == 50 {
			t.Fatalf("sessions: %v\n%s", err, js)
		}
	}
	cmd := command("inspect", "--limit", "2", "--addr", srv.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || bytes.Count(out, []byte("ses_")) != 2 {
		t.Fatalf("first page: %v\n%s", err, out)
	}
	hint := strings.TrimSpace(stderr.String())
	cursor, ok := strings.CutPrefix(hint, "more sessions: rcm inspect --after ")
	if !ok {
		t.Fatalf("no next-page hint: %q", hint)
	}
	cmd = command("inspect", "--limit", "2", "--after", cursor, "--addr", srv.URL)
	stderr.Reset()
	cmd.Stderr = &stderr
	out2, err := cmd.Output()
	if err != nil || bytes.Count(out2, []byte("ses_")) != 1 || stderr.Len() != 0 {
		t.Fatalf("second page: %v\n%s%s", err, out2, stderr.Bytes())
	}
	for _, id := range []string{"ses_a", "ses_b", "ses_c"} {
		if bytes.Count(append(out, out2...), []byte(id)) != 1 {
			t.Errorf("%s not listed exactly once:\n%s%s", id, out, out2)
		}
	}
}

func TestInspectArgs(t *testing.T) {
	for _, c := range []struct {
		args        []string
		flags, rest string
		err         bool
	}{
		{[]string{"ses_X", "--addr", "u"}, "[--addr u]", "[ses_X]", false},
		{[]string{"--addr", "u", "ses_X"}, "[--addr u]", "[ses_X]", false},
		{[]string{"--json", "ses_X", "--events=5"}, "[--json=true --events=5]", "[ses_X]", false},
		{[]string{"--", "-odd"}, "[]", "[-odd]", false},
		{[]string{"ses_X", "--addr"}, "", "", true},
	} {
		flags, rest, err := splitArgs(c.args, "json")
		if (err != nil) != c.err || !c.err && (fmt.Sprint(flags) != c.flags || fmt.Sprint(rest) != c.rest) {
			t.Errorf("%q: flags %q rest %q err %v", c.args, flags, rest, err)
		}
	}
	for addr, want := range map[string]string{
		"127.0.0.1:8787":         "http://127.0.0.1:8787",
		"http://127.0.0.1:8787/": "http://127.0.0.1:8787",
		"https://rcm.example":    "https://rcm.example",
		"ftp://x":                "",
		"http://":                "",
		"127.0.0.1:8787 x":       "",
	} {
		got, err := baseURL(addr)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("baseURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	out, err := command("inspect", "--addr", "ftp://x").CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("want host:port")) {
		t.Fatalf("bad --addr: %v\n%s", err, out)
	}
}

// TestInspectSendsAuthToken: against an rcm with --auth-token, `rcm
// inspect` is refused without RCM_AUTH_TOKEN and served with it.
func TestInspectSendsAuthToken(t *testing.T) {
	const token = "inspect-token-0123456789"
	cfg := proxy.Config{Upstream: "http://127.0.0.1:9/v1", DB: filepath.Join(t.TempDir(), "rcm.db"), AuthToken: token}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h, err := proxy.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer func() { srv.Close(); h.Close() }()
	cmd := command("inspect", "--addr", srv.URL)
	cmd.Env = append(cmd.Env, "RCM_AUTH_TOKEN=")
	if out, err := cmd.CombinedOutput(); err == nil || !bytes.Contains(out, []byte("auth token")) {
		t.Fatalf("without the token: %v\n%s", err, out)
	}
	cmd = command("inspect", "--addr", srv.URL)
	cmd.Env = append(cmd.Env, "RCM_AUTH_TOKEN="+token)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("with the token: %v\n%s", err, out)
	}
}
