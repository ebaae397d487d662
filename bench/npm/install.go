package npm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Errors that mean "the package cannot be installed here" rather than "the
// install is broken": callers (tests) may skip on them.
var (
	ErrNoNPM       = errors.New("npm not found on PATH (install Node.js and npm)")
	ErrUnreachable = errors.New("npm registry unreachable")
)

// Install runs `npm install pkg@version` into dir (created), with the
// caller's environment (its registry and proxy settings). Errors wrap
// ErrNoNPM when npm is missing and ErrUnreachable when it cannot reach its
// registry or ctx ends first.
func Install(ctx context.Context, dir, pkg, version string) error {
	bin, err := exec.LookPath("npm")
	if err != nil {
		return ErrNoNPM
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, "install", "--prefix", dir,
		"--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error", pkg+"@"+version)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil || Unreachable(out.String()) {
			err = ErrUnreachable
		}
		return fmt.Errorf("npm install %s@%s: %w: %s", pkg, version, err, head(out.String(), 600))
	}
	return nil
}

// head returns the first n bytes of s: npm says what went wrong first,
// then where its log is.
func head(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
