package proxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// npmTool returns the binary bin of the npm package pkg@version, installed
// once into the user's cache (~/.cache/rcm/dir). It skips when npm cannot
// install it, unless CI is set and the environment variable require is
// "1", where that fails.
func npmTool(ctx context.Context, t *testing.T, dir, pkg, version, bin, require string) string {
	t.Helper()
	fail := func(err error) {
		t.Helper()
		if os.Getenv("CI") != "" && os.Getenv(require) == "1" {
			t.Fatalf("%s@%s is required here (CI, %s=1) but cannot be installed: %v", pkg, version, require, err)
		}
		t.Skipf("skipping: %s@%s cannot be installed from npm here: %v (CI=true %s=1 makes this a failure)", pkg, version, err, require)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		fail(err)
	}
	dir = filepath.Join(cache, "rcm", dir)
	path := filepath.Join(dir, "node_modules", ".bin", bin)
	works := func() bool {
		out, err := exec.CommandContext(ctx, path, "--version").Output()
		return err == nil && strings.Contains(string(out), version)
	}
	if works() {
		return path
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		fail(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error", pkg+"@"+version)
	if out, err := cmd.CombinedOutput(); err != nil {
		fail(fmt.Errorf("npm install: %v: %s", err, out))
	}
	if !works() {
		fail(errors.New("installed binary does not run"))
	}
	return path
}
