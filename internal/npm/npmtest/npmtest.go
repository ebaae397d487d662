// Package npmtest installs, in the real-client tests, the clients they run
// (OpenCode, Claude Code, Codex from npm), and decides what an install that
// failed means: a skip where npm cannot install here, a failure under CI
// when the client is required there, a failure when the install is broken.
package npmtest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/ci"
	"github.com/rcm-dev/rcm/internal/client/claudecode"
	"github.com/rcm-dev/rcm/internal/client/codex"
	"github.com/rcm-dev/rcm/internal/client/opencode"
	"github.com/rcm-dev/rcm/internal/npm"
)

// Client is a client the tests install from npm, at the release rcm is
// tested against.
type Client struct {
	name    string // the client and its version, for messages
	require string // the environment variable that requires it under CI
	install func(ctx context.Context) (string, error)
}

// The clients, each installed into the user cache (~/.cache/rcm) when
// absent.
var (
	OpenCode = Client{"OpenCode " + opencode.Version, "RCM_REQUIRE_OPENCODE",
		func(ctx context.Context) (string, error) { return opencode.Install(ctx, "", opencode.Version) }}
	ClaudeCode = Client{"Claude Code " + claudecode.Version, "RCM_REQUIRE_CLAUDE",
		func(ctx context.Context) (string, error) { return claudecode.Install(ctx, "") }}
	Codex = Client{"Codex " + codex.Version, "RCM_REQUIRE_CODEX",
		func(ctx context.Context) (string, error) { return codex.Install(ctx, "") }}
)

// Install returns the client's binary, or ends the test: it skips when
// npm is missing or its registry unreachable, unless CI is set (package
// ci) and the client's RCM_REQUIRE_* variable is "1", where that fails, as
// does any other error.
func (c Client) Install(ctx context.Context, t testing.TB) string {
	t.Helper()
	start := time.Now()
	bin, err := c.install(ctx)
	cannot := errors.Is(err, npm.ErrNoNPM) || errors.Is(err, npm.ErrUnreachable)
	switch {
	case err == nil:
	case cannot && (!ci.On() || os.Getenv(c.require) != "1"):
		t.Skipf("skipping: %s cannot be installed from npm here: %v (CI=true %s=1 makes this a failure)", c.name, err, c.require)
	case cannot:
		t.Fatalf("%s is required here (CI, %s=1) but cannot be installed: %v", c.name, c.require, err)
	default:
		t.Fatal(err)
	}
	t.Logf("%s at %s (%v)", c.name, bin, time.Since(start).Round(time.Millisecond))
	return bin
}

// Prepare starts a test that runs the client: it skips under -short,
// installs the client (see Install) and returns its binary with a context
// that ends after d or with the test.
func (c Client) Prepare(t *testing.T, d time.Duration) (context.Context, string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("runs the real %s client", c.name)
	}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx, c.Install(ctx, t)
}
