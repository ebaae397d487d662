package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// KeyEnv is the environment variable the provider reads its API key from
// (its env_key): the key stays out of config.toml.
const KeyEnv = "RCM_CODEX_KEY"

// placeholderKey is sent when Env is given no key: Codex will not call a
// provider whose env_key is unset, and rcm then sends its own upstream key.
const placeholderKey = "sk-rcm-bench"

// Config is the part of config.toml a caller chooses: the one provider
// ("rcm") Codex uses. The zero value is not usable: BaseURL is required.
type Config struct {
	// BaseURL is the provider's base_url up to /v1 (Codex appends
	// /responses), e.g. http://127.0.0.1:8787/rcm/v1.
	BaseURL string
	// WebSocket turns on the Responses WebSocket mode
	// (supports_websockets); Codex speaks HTTP with SSE when false, and
	// falls back to it when the upgrade is refused.
	WebSocket bool
	// Headers are sent on every call (the provider's http_headers).
	Headers map[string]string
	// Context is the model's context window in tokens
	// (model_context_window), which Codex compacts against; Codex's own
	// figure for the model when 0.
	Context int
}

// TOML returns config.toml: the provider, and the settings that keep Codex
// unattended and offline (../shared/codex/README.md): no approvals, no
// sandbox, no update check, no plugin sync or analytics (which would call
// chatgpt.com and ab.chatgpt.com), no retries (a failed call fails the
// turn at once, as the bench counts it).
func (c Config) TOML() []byte {
	var b bytes.Buffer
	b.WriteString("model_provider = \"rcm\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\ncheck_for_update_on_startup = false\n")
	if c.Context > 0 {
		fmt.Fprintf(&b, "model_context_window = %d\n", c.Context)
	}
	fmt.Fprintf(&b, "\n[model_providers.rcm]\nname = \"rcm\"\nbase_url = %s\nenv_key = %q\nwire_api = \"responses\"\nsupports_websockets = %v\nrequest_max_retries = 0\nstream_max_retries = 0\n",
		quote(c.BaseURL), KeyEnv, c.WebSocket)
	if len(c.Headers) > 0 {
		names := make([]string, 0, len(c.Headers))
		for k := range c.Headers {
			names = append(names, k)
		}
		slices.Sort(names)
		b.WriteString("http_headers = { ")
		for i, k := range names {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s = %s", quote(k), quote(c.Headers[k]))
		}
		b.WriteString(" }\n")
	}
	b.WriteString("\n[features]\nplugins = false\n\n[analytics]\nenabled = false\n")
	return b.Bytes()
}

// quote writes s as a TOML basic string: JSON's escapes (\", \\, \n,
// \uXXXX) are all TOML's too.
func quote(s string) string {
	q, _ := json.Marshal(s) // a string always marshals
	return string(q)
}

// Env writes cfg's config.toml into home/.codex (created) and returns the
// environment of an isolated Codex whose HOME is home: the caller's
// environment without HOME, XDG_*, CODEX_* and OPENAI_* (a user's own key,
// base URL or config must not leak into a run), plus HOME, CODEX_HOME and
// KeyEnv=key (a placeholder when empty).
func Env(home string, cfg Config, key string) ([]string, error) {
	home, err := filepath.Abs(home)
	if err != nil {
		return nil, fmt.Errorf("codex: home: %w", err)
	}
	if cfg.BaseURL == "" {
		return nil, fmt.Errorf("codex: no base URL")
	}
	dir := filepath.Join(home, ".codex")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), cfg.TOML(), 0o600); err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || name == KeyEnv || strings.HasPrefix(name, "XDG_") || strings.HasPrefix(name, "CODEX_") || strings.HasPrefix(name, "OPENAI_") {
			continue
		}
		env = append(env, kv)
	}
	if key == "" {
		key = placeholderKey
	}
	return append(env, "HOME="+home, "CODEX_HOME="+dir, KeyEnv+"="+key), nil
}
