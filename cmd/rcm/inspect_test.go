package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/bench/scripted"
	"github.com/rcm-dev/rcm/proxy"
)

// TestInspect runs `rcm inspect` against a live proxy that has seen a
// two-task session in rcm mode.
func TestInspect(t *testing.T) {
	up := httptest.NewServer(scripted.New(scripted.Script{Default: scripted.Reply{Text: "done"}}))
	defer up.Close()
	cfg := proxy.Config{Upstream: up.URL + "/v1", DB: filepath.Join(t.TempDir(), "rcm.db")}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h, err := proxy.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer func() { srv.Close(); h.Close() }()
	msgs := []string{
		`{"role":"system","content":"You are opencode."}`,
		`{"role":"user","content":"In /work/ws1 fix the compiler crash"}`,
		`{"role":"assistant","content":"done"}`,
		`{"role":"user","content":"In /work/ws2 add the validator test"}`,
	}
	for _, n := range []int{2, 4} {
		body := `{"model":"m","stream":true,"messages":[` + strings.Join(msgs[:n], ",") + `]}`
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("X-Session-Id", "ses_inspect")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// The records are written after the responses; the proxy serves the
	// inspector from the same store, so poll through the command itself.
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
	for _, want := range []string{"session ses_inspect: 2 calls, 2 tasks", "== task t1", "fix the compiler crash", "== task t2", "routing decisions", "new     none"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	out, err = command("inspect", "--addr", srv.URL).Output()
	if err != nil || !bytes.Contains(out, []byte("ses_inspect")) {
		t.Fatalf("session list: %v\n%s", err, out)
	}
	out, err = command("inspect", "nope", "--addr", srv.URL).CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte(`no session "nope"`)) {
		t.Fatalf("unknown session: %v\n%s", err, out)
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
