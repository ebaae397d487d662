package opencode

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/rcm-dev/rcm/internal/npm"
	"github.com/rcm-dev/rcm/internal/proc"
)

// Version is the OpenCode release rcm is tested against.
const Version = "1.18.33"

// Errors that mean "OpenCode cannot be installed here" rather than "the
// install is broken": callers (tests) may skip on them.
var (
	ErrNoNPM       = npm.ErrNoNPM
	ErrUnreachable = npm.ErrUnreachable
)

// marker is written into an install directory once the install has been
// verified; a directory without it is never reused.
const marker = ".rcm-installed"

// binRel is where npm links the opencode binary inside an install directory.
var binRel = filepath.Join("node_modules", ".bin", "opencode")

// DefaultCacheDir is where Install puts version when given no directory:
// os.UserCacheDir()/rcm/opencode-VERSION.
func DefaultCacheDir(version string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("opencode: no cache directory (set XDG_CACHE_HOME or HOME): %w", err)
	}
	return filepath.Join(base, "rcm", "opencode-"+version), nil
}

// Install makes OpenCode version available and returns the path of its
// binary. It runs `npm i opencode-ai@VERSION` into cacheDir (DefaultCacheDir
// when empty), or reuses a previous complete install there. npm runs with the
// caller's environment (its registry and proxy settings). ctx bounds the
// install; errors wrap ErrNoNPM or ErrUnreachable when npm is missing or
// cannot reach its registry.
func Install(ctx context.Context, cacheDir, version string) (string, error) {
	if !validVersion(version) {
		return "", fmt.Errorf("opencode: version %q: want an exact release such as %s", version, Version)
	}
	if cacheDir == "" {
		d, err := DefaultCacheDir(version)
		if err != nil {
			return "", err
		}
		cacheDir = d
	}
	if bin, ok := installed(cacheDir); ok {
		return bin, nil
	}
	npmBin, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("opencode: %w", ErrNoNPM)
	}
	if err := os.MkdirAll(filepath.Dir(cacheDir), 0o755); err != nil {
		return "", fmt.Errorf("opencode: %w", err)
	}
	// Install beside the target and rename into place, so that an
	// interrupted install never looks complete.
	tmp, err := os.MkdirTemp(filepath.Dir(cacheDir), filepath.Base(cacheDir)+".tmp-")
	if err != nil {
		return "", fmt.Errorf("opencode: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := npmInstall(ctx, npmBin, tmp, version); err != nil {
		return "", err
	}
	if err := verify(ctx, tmp, version); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, marker), []byte(version+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("opencode: %w", err)
	}
	if bin, ok := installed(cacheDir); ok { // another process finished first
		return bin, nil
	}
	os.RemoveAll(cacheDir) // an incomplete earlier attempt
	if err := os.Rename(tmp, cacheDir); err != nil {
		// Another process may have finished the same install first.
		if bin, ok := installed(cacheDir); ok {
			return bin, nil
		}
		return "", fmt.Errorf("opencode: %w", err)
	}
	return filepath.Join(cacheDir, binRel), nil
}

// versionRE accepts exact releases (1.18.33, 1.2.0-beta.1); tags such as
// "latest" would be cached forever under one name.
var versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

func validVersion(v string) bool { return versionRE.MatchString(v) }

// installed reports the binary of a complete install in dir.
func installed(dir string) (string, bool) {
	if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
		return "", false
	}
	bin := filepath.Join(dir, binRel)
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		return "", false
	}
	return bin, true
}

func npmInstall(ctx context.Context, npmBin, dir, version string) error {
	cmd := exec.CommandContext(ctx, npmBin, "install", "--prefix", dir,
		"--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error",
		"opencode-ai@"+version)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = waitDelay
	proc.Group(cmd)
	err := cmd.Run()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("opencode: npm install opencode-ai@%s did not finish: %w (%w)", version, ctx.Err(), ErrUnreachable)
	case npm.Unreachable(out.String()):
		return fmt.Errorf("opencode: npm install opencode-ai@%s: %w: %s", version, ErrUnreachable, head(out.String(), 600))
	}
	return fmt.Errorf("opencode: npm install opencode-ai@%s: %w: %s", version, err, head(out.String(), 600))
}

// verify runs the new binary once (in a throw-away isolated home) and checks
// it reports version: npm may skip the package's postinstall step, which
// leaves a placeholder behind.
func verify(ctx context.Context, dir, version string) error {
	bin := filepath.Join(dir, binRel)
	env, err := Env(filepath.Join(dir, "verify-home"))
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Join(dir, "verify-home"))
	out, err := Run(ctx, bin, dir, env, "--version")
	if err != nil {
		return fmt.Errorf("opencode: installed binary does not run: %w", err)
	}
	if got := strings.TrimSpace(string(out)); got != version {
		return fmt.Errorf("opencode: installed binary reports version %q, want %q", got, version)
	}
	return nil
}

// head returns the first n bytes of s, for error messages (npm says what
// went wrong first, then where its log is).
func head(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

// tail returns the last n bytes of s, for error messages.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}
