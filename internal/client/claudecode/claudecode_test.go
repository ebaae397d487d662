package claudecode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEnv(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-user-own")
	t.Setenv("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
	t.Setenv("CLAUDE_CONFIG_DIR", "/home/user/.claude")
	t.Setenv("XDG_CONFIG_HOME", "/home/user/.config")
	t.Setenv("GOCACHE", "/tmp/gocache")
	home := filepath.Join(t.TempDir(), "h")
	for _, c := range []struct {
		key, threshold string
		want, not      []string
	}{
		{"", "", []string{"ANTHROPIC_API_KEY=sk-rcm-bench"}, []string{"ANTHROPIC_CUSTOM_HEADERS="}},
		{"sk-upstream", "0.8", []string{"ANTHROPIC_API_KEY=sk-upstream", "ANTHROPIC_CUSTOM_HEADERS=X-RCM-Threshold: 0.8"}, nil},
	} {
		env, err := Env(home, "http://127.0.0.1:1/router", c.key, c.threshold)
		if err != nil {
			t.Fatal(err)
		}
		want := append([]string{"HOME=" + home, "ANTHROPIC_BASE_URL=http://127.0.0.1:1/router", "GOCACHE=/tmp/gocache",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1"}, c.want...)
		for _, w := range want {
			if !slices.Contains(env, w) {
				t.Errorf("key %q: env lacks %s", c.key, w)
			}
		}
		for _, kv := range env {
			for _, bad := range append([]string{"sk-user-own", "api.anthropic.com", "CLAUDE_CONFIG_DIR=", "XDG_CONFIG_HOME="}, c.not...) {
				if strings.Contains(kv, bad) {
					t.Errorf("key %q: env has %s", c.key, kv)
				}
			}
		}
		if n := len(slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return !strings.HasPrefix(kv, "HOME=") })); n != 1 {
			t.Errorf("%d HOME entries", n)
		}
	}
	if st, err := os.Stat(filepath.Join(home, ".claude")); err != nil || !st.IsDir() {
		t.Errorf("home/.claude not created: %v", err)
	}
}

func TestNewID(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := NewID(), NewID()
	if !uuid.MatchString(a) || a == b {
		t.Errorf("ids %q %q, want distinct version-4 UUIDs", a, b)
	}
}

// fakeClaude is a stand-in claude that logs its arguments and stdin to
// LOG and prints the result JSON in RESULT (a file) with the session id
// it was given.
const fakeClaude = `#!/bin/sh
echo "$@" >> "$LOG"
cat >> "$LOG"; echo >> "$LOG"
pwd >> "$LOG"
sid=""
while [ $# -gt 0 ]; do case "$1" in --session-id|--resume) sid="$2";; esac; shift; done
sed "s/SID/$sid/" "$RESULT"
`

func TestSessionPrompt(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "claude")
	if err := os.WriteFile(bin, []byte(fakeClaude), 0o755); err != nil {
		t.Fatal(err)
	}
	log, result := filepath.Join(dir, "log"), filepath.Join(dir, "result.json")
	work := t.TempDir()
	s := &Session{Bin: bin, Dir: work, Env: []string{"PATH=" + os.Getenv("PATH"), "LOG=" + log, "RESULT=" + result}, Model: "m1", ID: NewID(), AutoCompact: 100000}
	set := func(json string) {
		if err := os.WriteFile(result, []byte(json), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	set(`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"SID"}`)
	if err := s.Prompt(ctx, "-first: fix it"); err != nil {
		t.Fatal(err)
	}
	set(`{"type":"result","subtype":"error_during_execution","is_error":true,"result":"API Error: 500","session_id":"SID"}`)
	var te *TurnError
	if err := s.Prompt(ctx, "/second"); !errors.As(err, &te) || te.Subtype != "error_during_execution" {
		t.Fatalf("failed turn: %v, want a TurnError", err)
	}
	set(`{"type":"result","is_error":false,"session_id":"00000000-0000-4000-8000-000000000000"}`)
	if err := s.Prompt(ctx, "third"); err == nil || !strings.Contains(err.Error(), "want "+s.ID) {
		t.Errorf("other session: %v", err)
	}
	set(`not json`)
	if err := s.Prompt(ctx, "fourth"); err == nil || !strings.Contains(err.Error(), "no JSON result") {
		t.Errorf("no result: %v", err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{
		"-p --output-format json --dangerously-skip-permissions --model m1 --autocompact 100000 --session-id " + s.ID, "-first: fix it", work,
		"-p --output-format json --dangerously-skip-permissions --model m1 --autocompact 100000 --resume " + s.ID, "/second", work,
		"-p --output-format json --dangerously-skip-permissions --model m1 --autocompact 100000 --resume " + s.ID, "third", work,
		"-p --output-format json --dangerously-skip-permissions --model m1 --autocompact 100000 --resume " + s.ID, "fourth", work,
	}
	if !slices.Equal(lines, want) {
		t.Errorf("claude ran as\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestSessionPromptCancel(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "claude")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The turn ends with its context (claude and its group killed), and
	// the session counts as started: the next turn resumes it.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	s := &Session{Bin: bin, Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH")}, ID: NewID()}
	if err := s.Prompt(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) || !s.started {
		t.Errorf("aborted turn: %v (started %v)", err, s.started)
	}
}
