package claudecode

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/rcm-dev/rcm/internal/npm"
)

// Version is the Claude Code release rcm is tested against (the one of
// ../shared/claude-code's captures).
const Version = "2.1.332"

// Errors that mean "Claude Code cannot be installed here" rather than "the
// install is broken": callers (tests) may skip on them.
var (
	ErrNoNPM       = npm.ErrNoNPM
	ErrUnreachable = npm.ErrUnreachable
)

// Install makes Claude Code Version available and returns its binary. It
// runs `npm install @anthropic-ai/claude-code@Version` into cacheDir
// (os.UserCacheDir()/rcm/claude-code-Version when empty, where proxy's
// real-client tests put it too), or reuses an install there whose binary
// reports Version (npm may skip the package's postinstall step, which
// leaves a placeholder behind). Errors wrap ErrNoNPM or ErrUnreachable
// when npm is missing or cannot reach its registry.
func Install(ctx context.Context, cacheDir string) (string, error) {
	if cacheDir == "" {
		d, err := npm.CacheDir("claude-code-" + Version)
		if err != nil {
			return "", fmt.Errorf("claudecode: %w", err)
		}
		cacheDir = d
	}
	bin, err := npm.Install(ctx, cacheDir, "@anthropic-ai/claude-code", Version, filepath.Join("node_modules", ".bin", "claude"))
	if err != nil {
		return "", fmt.Errorf("claudecode: %w", err)
	}
	return bin, nil
}
