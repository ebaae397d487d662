package claudecode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// offline are the switches that keep `claude -p` from calling anything but
// ANTHROPIC_BASE_URL (../shared/claude-code/README.md): without them it
// tries api.anthropic.com and telemetry hosts.
var offline = []string{
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
	"DISABLE_AUTOUPDATER=1", "DISABLE_BUG_COMMAND=1", "IS_SANDBOX=1", "NO_PROXY=127.0.0.1,localhost",
}

// Env returns the environment of an isolated Claude Code whose home is
// home (created): the caller's environment without HOME, XDG_*, CLAUDE_*
// and ANTHROPIC_* (a user's own key or base URL must not leak into a bench
// run), plus a private HOME, ANTHROPIC_BASE_URL=baseURL (rcm with its mode
// prefix, http://HOST/rcm), ANTHROPIC_API_KEY=key (a placeholder when
// empty: Claude Code will not start without one, and rcm then sends its
// own upstream key), X-RCM-Threshold as a custom header when threshold is
// not empty, and the offline switches.
func Env(home, baseURL, key, threshold string) ([]string, error) {
	home, err := filepath.Abs(home)
	if err != nil {
		return nil, fmt.Errorf("claudecode: home: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		return nil, fmt.Errorf("claudecode: %w", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || strings.HasPrefix(name, "XDG_") || strings.HasPrefix(name, "CLAUDE_") || strings.HasPrefix(name, "ANTHROPIC_") {
			continue
		}
		env = append(env, kv)
	}
	if key == "" {
		key = "sk-rcm-bench"
	}
	env = append(env, "HOME="+home, "ANTHROPIC_BASE_URL="+baseURL, "ANTHROPIC_API_KEY="+key)
	if threshold != "" {
		env = append(env, "ANTHROPIC_CUSTOM_HEADERS=X-RCM-Threshold: "+threshold)
	}
	return append(env, offline...), nil
}
