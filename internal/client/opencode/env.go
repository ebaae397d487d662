package opencode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// offline are the switches that keep OpenCode off the network and away
// from the user's other tools (see /work/shared/opencode/README.md).
var offline = []string{
	"OPENCODE_DISABLE_AUTOUPDATE=1",
	"OPENCODE_DISABLE_MODELS_FETCH=1",
	"OPENCODE_DISABLE_SHARE=1",
	"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
	"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
	"OPENCODE_DISABLE_CLAUDE_CODE=1",
	"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
}

// closedRegistry is a loopback port nothing listens on: the background
// plugin install OpenCode starts fails there at once.
const closedRegistry = "registry=http://127.0.0.1:9/\n"

// Env returns the environment for an isolated OpenCode whose home is home:
// the caller's environment without its HOME, XDG_* and OPENCODE_* variables
// (a user's OPENCODE_CONFIG must not leak into a bench run), plus a private
// HOME and XDG directories under home and the OPENCODE_DISABLE_* switches.
// It creates those directories and writes home/.npmrc pointing npm at a
// closed loopback port. Put the OpenCode configuration in GlobalConfig(home).
func Env(home string) ([]string, error) {
	home, err := filepath.Abs(home)
	if err != nil {
		return nil, fmt.Errorf("opencode: home: %w", err)
	}
	xdg := [][2]string{
		{"XDG_CONFIG_HOME", filepath.Join(home, ".config")},
		{"XDG_DATA_HOME", filepath.Join(home, ".local", "share")},
		{"XDG_CACHE_HOME", filepath.Join(home, ".cache")},
		{"XDG_STATE_HOME", filepath.Join(home, ".local", "state")},
	}
	for _, kv := range xdg {
		if err := os.MkdirAll(kv[1], 0o700); err != nil {
			return nil, fmt.Errorf("opencode: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte(closedRegistry), 0o600); err != nil {
		return nil, fmt.Errorf("opencode: %w", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || strings.HasPrefix(name, "XDG_") || strings.HasPrefix(name, "OPENCODE_") ||
			strings.HasPrefix(strings.ToLower(name), "npm_config_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home)
	for _, kv := range xdg {
		env = append(env, kv[0]+"="+kv[1])
	}
	return append(env, offline...), nil
}

// GlobalConfig is the path of the user-level opencode.json under an Env
// home. Configuration put there, rather than in the project directory,
// leaves the project's files (a bench checkout's diff) untouched.
func GlobalConfig(home string) string {
	return filepath.Join(home, ".config", "opencode", "opencode.json")
}
