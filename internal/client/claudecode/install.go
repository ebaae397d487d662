package claudecode

import (
	"context"
	"path/filepath"

	"github.com/rcm-dev/rcm/internal/npm"
)

// Version is the Claude Code release rcm is tested against (the one of
// ../shared/claude-code's captures).
const Version = "2.1.332"

// Install makes Claude Code Version available and returns its binary. It runs
// `npm install @anthropic-ai/claude-code@Version` into cacheDir
// (os.UserCacheDir()/rcm/claude-code-Version when empty, where proxy's
// real-client tests put it too), or reuses an install there whose binary
// reports Version (npm may skip the package's postinstall step, which
// leaves a placeholder behind). Errors wrap npm.ErrNoNPM or
// npm.ErrUnreachable when npm is missing or cannot reach its registry.
func Install(ctx context.Context, cacheDir string) (string, error) {
	return npm.Pinned(ctx, cacheDir, "claude-code", "@anthropic-ai/claude-code", Version, filepath.Join("node_modules", ".bin", "claude"))
}
