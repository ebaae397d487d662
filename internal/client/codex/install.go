package codex

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rcm-dev/rcm/bench/npm"
)

// Version is the Codex CLI release rcm is tested against (the one of
// ../shared/codex's captures).
const Version = "0.171.0"

const pkg = "@openai/codex"

// Errors that mean "Codex cannot be installed here" rather than "the
// install is broken": callers (tests) may skip on them.
var (
	ErrNoNPM       = npm.ErrNoNPM
	ErrUnreachable = npm.ErrUnreachable
)

// binRel is where npm links the codex binary inside an install directory
// (the native binary itself comes in @openai/codex-linux-x64 and the like).
var binRel = filepath.Join("node_modules", ".bin", "codex")

// Install makes Codex Version available and returns its binary. It runs
// `npm install @openai/codex@Version` into cacheDir
// (os.UserCacheDir()/rcm/codex-Version when empty), or reuses an install
// there whose binary reports Version. Errors wrap ErrNoNPM or
// ErrUnreachable when npm is missing or cannot reach its registry.
func Install(ctx context.Context, cacheDir string) (string, error) {
	if cacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("codex: no cache directory (set XDG_CACHE_HOME or HOME): %w", err)
		}
		cacheDir = filepath.Join(base, "rcm", "codex-"+Version)
	}
	bin := filepath.Join(cacheDir, binRel)
	if works(ctx, bin) == nil {
		return bin, nil
	}
	if err := npm.Install(ctx, cacheDir, pkg, Version); err != nil {
		return "", fmt.Errorf("codex: %w", err)
	}
	if err := works(ctx, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// works checks that bin runs and reports Version ("codex-cli 0.171.0"):
// npm may leave the platform package out (an unsupported platform, or
// optional dependencies turned off), and then the launcher fails.
func works(ctx context.Context, bin string) error {
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return fmt.Errorf("codex: %s does not run: %w", bin, err)
	}
	if f := strings.Fields(string(out)); len(f) == 0 || f[len(f)-1] != Version {
		return fmt.Errorf("codex: %s reports version %q, want %s", bin, strings.TrimSpace(string(out)), Version)
	}
	return nil
}
