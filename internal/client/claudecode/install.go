package claudecode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rcm-dev/rcm/internal/npm"
)

// Version is the Claude Code release rcm is tested against (the one of
// ../shared/claude-code's captures).
const Version = "2.1.332"

const pkg = "@anthropic-ai/claude-code"

// Errors that mean "Claude Code cannot be installed here" rather than "the
// install is broken": callers (tests) may skip on them.
var (
	ErrNoNPM       = errors.New("npm not found on PATH (install Node.js and npm to run Claude Code)")
	ErrUnreachable = errors.New("npm registry unreachable")
)

// binRel is where npm links the claude binary inside an install directory.
var binRel = filepath.Join("node_modules", ".bin", "claude")

// Install makes Claude Code Version available and returns its binary. It
// runs `npm install @anthropic-ai/claude-code@Version` into cacheDir
// (os.UserCacheDir()/rcm/claude-code-Version when empty, where proxy's
// real-client tests put it too), or reuses an install there whose binary
// reports Version. Errors wrap ErrNoNPM or ErrUnreachable when npm is
// missing or cannot reach its registry.
func Install(ctx context.Context, cacheDir string) (string, error) {
	if cacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("claudecode: no cache directory (set XDG_CACHE_HOME or HOME): %w", err)
		}
		cacheDir = filepath.Join(base, "rcm", "claude-code-"+Version)
	}
	bin := filepath.Join(cacheDir, binRel)
	if works(ctx, bin) == nil {
		return bin, nil
	}
	npmBin, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("claudecode: %w", ErrNoNPM)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("claudecode: %w", err)
	}
	cmd := exec.CommandContext(ctx, npmBin, "install", "--prefix", cacheDir,
		"--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error", pkg+"@"+Version)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil || npm.Unreachable(out.String()) {
			return "", fmt.Errorf("claudecode: npm install %s@%s: %w: %s", pkg, Version, ErrUnreachable, clip(out.String()))
		}
		return "", fmt.Errorf("claudecode: npm install %s@%s: %w: %s", pkg, Version, err, clip(out.String()))
	}
	if err := works(ctx, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// works checks that bin runs and reports Version: npm may skip the
// package's postinstall step, which leaves a placeholder behind.
func works(ctx context.Context, bin string) error {
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return fmt.Errorf("claudecode: %s does not run: %w", bin, err)
	}
	if !strings.HasPrefix(strings.TrimSpace(string(out)), Version) {
		return fmt.Errorf("claudecode: %s reports version %q, want %s", bin, strings.TrimSpace(string(out)), Version)
	}
	return nil
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 600 {
		s = s[:600] + "..."
	}
	return s
}
