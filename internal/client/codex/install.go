package codex

import (
	"context"
	"path/filepath"

	"github.com/rcm-dev/rcm/internal/npm"
)

// Version is the Codex CLI release rcm is tested against (the one of
// ../shared/codex's captures).
const Version = "0.171.0"

// Install makes Codex Version available and returns its binary. It runs
// `npm install @openai/codex@Version` into cacheDir
// (os.UserCacheDir()/rcm/codex-Version when empty), or reuses an install
// there whose binary reports Version ("codex-cli 0.171.0"; the native
// binary itself comes in a platform package such as
// @openai/codex-linux-x64). Errors wrap npm.ErrNoNPM or npm.ErrUnreachable
// when npm is missing or cannot reach its registry.
func Install(ctx context.Context, cacheDir string) (string, error) {
	return npm.Pinned(ctx, cacheDir, "codex", "@openai/codex", Version, filepath.Join("node_modules", ".bin", "codex"))
}
