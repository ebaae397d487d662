package npm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rcm-dev/rcm/internal/proc"
)

// Errors that mean "the package cannot be installed here" rather than "the
// install is broken": callers (tests) may skip on them.
var (
	ErrNoNPM       = errors.New("npm not found on PATH (install Node.js and npm)")
	ErrUnreachable = errors.New("npm registry unreachable")
)

// CacheDir is where a client's pinned install goes by default:
// os.UserCacheDir()/rcm/name (the real-client tests put theirs there too).
func CacheDir(name string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (set XDG_CACHE_HOME or HOME): %w", err)
	}
	return filepath.Join(base, "rcm", name), nil
}

// Pinned returns the binary bin of the release version of pkg, the
// client named name: Install into cacheDir, or into CacheDir(name-version)
// when cacheDir is empty. Its errors start with name.
func Pinned(ctx context.Context, cacheDir, name, pkg, version, bin string) (string, error) {
	if cacheDir == "" {
		d, err := CacheDir(name + "-" + version)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		cacheDir = d
	}
	path, err := Install(ctx, cacheDir, pkg, version, bin)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return path, nil
}

// Install returns the binary bin (a path inside dir, such as
// node_modules/.bin/codex) of pkg@version: the one in dir when it runs and
// reports version, else one installed there now with `npm install`, with
// the caller's environment (its registry and proxy settings). Errors wrap
// ErrNoNPM when npm is missing and ErrUnreachable when it cannot reach its
// registry or ctx ends first.
//
// Installs into one dir are serialized across processes (go test runs
// packages in parallel, and several install the same client): the check
// runs under the lock too, since running a binary that another npm is
// still writing fails with "text file busy".
func Install(ctx context.Context, dir, pkg, version, bin string) (string, error) {
	bin = filepath.Join(dir, bin)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lock(dir + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if reports(ctx, bin, version) == nil {
		return bin, nil
	}
	npmBin, err := exec.LookPath("npm")
	if err != nil {
		return "", ErrNoNPM
	}
	cmd := exec.CommandContext(ctx, npmBin, "install", "--prefix", dir,
		"--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error", pkg+"@"+version)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil || Unreachable(out.String()) {
			err = ErrUnreachable
		}
		return "", fmt.Errorf("npm install %s@%s: %w: %s", pkg, version, err, proc.Head(out.String()))
	}
	if err := reports(ctx, bin, version); err != nil {
		return "", err
	}
	return bin, nil
}

// reports checks that bin runs and that `bin --version` names version: npm
// may leave a package's native part out (a platform it lacks, a skipped
// postinstall step), and then the launcher fails or is a placeholder.
func reports(ctx context.Context, bin, version string) error {
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s does not run: %w", bin, err)
	}
	if !slices.Contains(strings.Fields(string(out)), version) {
		return fmt.Errorf("%s reports version %q, want %s", bin, strings.TrimSpace(string(out)), version)
	}
	return nil
}
