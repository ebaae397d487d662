package codex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfigTOML(t *testing.T) {
	for _, c := range []struct {
		cfg       Config
		want, not []string
	}{
		{Config{BaseURL: "http://127.0.0.1:1/rcm/v1"},
			[]string{`base_url = "http://127.0.0.1:1/rcm/v1"`, "supports_websockets = false", `env_key = "RCM_CODEX_KEY"`, `wire_api = "responses"`},
			[]string{"http_headers", "model_context_window"}},
		{Config{BaseURL: "http://h/v1", WebSocket: true, Context: 200000, Headers: map[string]string{"X-Session-Id": `a"b`, "X-RCM-Threshold": "0.8"}},
			[]string{"supports_websockets = true", "model_context_window = 200000\n", `http_headers = { "X-RCM-Threshold" = "0.8", "X-Session-Id" = "a\"b" }`},
			nil},
	} {
		s := string(c.cfg.TOML())
		// The settings that keep Codex unattended and offline are always there.
		for _, w := range append(c.want, `model_provider = "rcm"`, `approval_policy = "never"`, `sandbox_mode = "danger-full-access"`,
			"check_for_update_on_startup = false", "request_max_retries = 0", "stream_max_retries = 0",
			"[features]\nplugins = false", "[analytics]\nenabled = false") {
			if !strings.Contains(s, w) {
				t.Errorf("config.toml lacks %q:\n%s", w, s)
			}
		}
		for _, n := range c.not {
			if strings.Contains(s, n) {
				t.Errorf("config.toml has %q:\n%s", n, s)
			}
		}
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-user-own")
	t.Setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
	t.Setenv("CODEX_API_KEY", "sk-user-codex")
	t.Setenv("CODEX_HOME", "/home/user/.codex")
	t.Setenv("XDG_CONFIG_HOME", "/home/user/.config")
	t.Setenv(KeyEnv, "sk-stale")
	t.Setenv("GOCACHE", "/tmp/gocache")
	for _, key := range []string{"", "sk-upstream-secret"} {
		home := filepath.Join(t.TempDir(), "h")
		env, err := Env(home, Config{BaseURL: "http://127.0.0.1:1/router/v1"}, key)
		if err != nil {
			t.Fatal(err)
		}
		wantKey := key
		if key == "" {
			wantKey = placeholderKey
		}
		for _, w := range []string{"HOME=" + home, "CODEX_HOME=" + filepath.Join(home, ".codex"), KeyEnv + "=" + wantKey, "GOCACHE=/tmp/gocache"} {
			if !slices.Contains(env, w) {
				t.Errorf("key %q: env lacks %s", key, w)
			}
		}
		for _, kv := range env {
			for _, bad := range []string{"sk-user-own", "sk-user-codex", "sk-stale", "api.openai.com", "/home/user", "XDG_CONFIG_HOME="} {
				if strings.Contains(kv, bad) {
					t.Errorf("key %q: env has %s", key, kv)
				}
			}
		}
		for _, name := range []string{"HOME=", "CODEX_HOME=", KeyEnv + "="} {
			if n := len(slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return !strings.HasPrefix(kv, name) })); n != 1 {
				t.Errorf("%d %s entries", n, name)
			}
		}
		// The key reaches Codex through its environment only.
		b, err := os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "/router/v1") || strings.Contains(string(b), wantKey) {
			t.Errorf("config.toml written:\n%s", b)
		}
		if st, err := os.Stat(filepath.Join(home, ".codex", "config.toml")); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("config.toml mode: %v %v", st.Mode(), err)
		}
	}
	if _, err := Env(t.TempDir(), Config{}, ""); err == nil {
		t.Error("no base URL: no error")
	}
}

// fakeCodex is a stand-in codex that logs its arguments, stdin and working
// directory to LOG and prints the JSONL events in RESULT (a file), with
// THREAD replaced by the thread it resumed, else T1.
const fakeCodex = `#!/bin/sh
echo "$@" >> "$LOG"
cat >> "$LOG"; echo >> "$LOG"
pwd >> "$LOG"
tid=T1
while [ $# -gt 0 ]; do case "$1" in resume) tid="$2";; esac; shift; done
sed "s/THREAD/$tid/" "$RESULT"
grep -q '"turn.failed"' "$RESULT" && exit 1
exit 0
`

func TestSessionPrompt(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "codex")
	if err := os.WriteFile(bin, []byte(fakeCodex), 0o755); err != nil {
		t.Fatal(err)
	}
	log, result := filepath.Join(dir, "log"), filepath.Join(dir, "result.jsonl")
	work := t.TempDir()
	s := &Session{Bin: bin, Dir: work, Env: []string{"PATH=" + os.Getenv("PATH"), "LOG=" + log, "RESULT=" + result}, Model: "m1", Args: []string{"-c", "x=1"}}
	set := func(jsonl string) {
		if err := os.WriteFile(result, []byte(jsonl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	set(`{"type":"thread.started","thread_id":"THREAD"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"done"}}
{"type":"turn.completed","usage":{"input_tokens":1}}
`)
	if err := s.Prompt(ctx, "-first: fix it"); err != nil || s.Thread() != "T1" {
		t.Fatalf("first turn: %v, thread %q", err, s.Thread())
	}
	set(`{"type":"thread.started","thread_id":"THREAD"}
{"type":"error","message":"Reconnecting... 1/5"}
{"type":"turn.failed","error":{"message":"{\"error\":{\"message\":\"upstream exploded\"}}"}}
`)
	var te *TurnError
	if err := s.Prompt(ctx, "second"); !errors.As(err, &te) || !strings.Contains(te.Message, "upstream exploded") {
		t.Fatalf("failed turn: %v, want a TurnError", err)
	}
	set(`{"type":"thread.started","thread_id":"other"}
{"type":"turn.completed"}
`)
	if err := s.Prompt(ctx, "third"); err == nil || !strings.Contains(err.Error(), "want T1") {
		t.Errorf("other thread: %v", err)
	}
	set(`{"type":"thread.started","thread_id":"THREAD"}
not json
`)
	if err := s.Prompt(ctx, "fourth"); err == nil || !strings.Contains(err.Error(), "no turn.completed") {
		t.Errorf("no turn.completed: %v", err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	const exec = "exec --json --strict-config --skip-git-repo-check -c x=1 -m m1 "
	want := []string{
		exec + "-", "-first: fix it", work,
		exec + "resume T1 -", "second", work,
		exec + "resume T1 -", "third", work,
		exec + "resume T1 -", "fourth", work,
	}
	if !slices.Equal(lines, want) {
		t.Errorf("codex ran as\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestReadEvents(t *testing.T) {
	ev := readEvents([]byte(`{"type":"thread.started","thread_id":"019"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for ` + "`m`" + ` not found."}}
{"type":"error","message":"Reconnecting... waiting for network"}
` + `{"type":"item.completed","item":{"type":"command_execution","aggregated_output":"` + strings.Repeat("x", 100000) + `"}}
{"type":"turn.failed","error":{"message":"stream disconnected"}}
`))
	if ev.thread != "019" || ev.completed || ev.failed == nil || ev.failed.Message != "stream disconnected" || ev.errors != "Reconnecting... waiting for network\n" {
		t.Errorf("events %+v", ev)
	}
	if ev := readEvents([]byte("garbage\n{\"type\":\n")); ev != (events{}) {
		t.Errorf("garbage read as %+v", ev)
	}
}

func TestSessionPromptCancel(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "codex")
	// Codex names the thread, then hangs (a tool that never ends).
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho '{\"type\":\"thread.started\",\"thread_id\":\"T9\"}'\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The turn ends with its context (codex and its group killed), and
	// the thread it named is resumed by the next turn.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s := &Session{Bin: bin, Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH")}}
	if err := s.Prompt(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) || s.Thread() != "T9" {
		t.Errorf("aborted turn: %v (thread %q)", err, s.Thread())
	}
	if got := s.args(); !slices.Contains(got, "resume") || !slices.Contains(got, "T9") {
		t.Errorf("next turn runs %v, want it to resume T9", got)
	}
}
