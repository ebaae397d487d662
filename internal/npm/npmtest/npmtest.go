// Package npmtest decides, in the real-client tests, what an install that
// failed means: a skip where npm cannot install here, a failure under CI
// when the client is required there, a failure when the install is broken.
package npmtest

import (
	"errors"
	"os"
	"testing"

	"github.com/rcm-dev/rcm/internal/ci"
	"github.com/rcm-dev/rcm/internal/npm"
)

// Need ends the test unless err is nil: it skips when npm is missing or
// its registry unreachable, unless CI is set (package ci) and the environment variable
// require is "1", where that fails, as does any other error. client names
// the client and its version in the message.
func Need(t testing.TB, client, require string, err error) {
	t.Helper()
	cannot := errors.Is(err, npm.ErrNoNPM) || errors.Is(err, npm.ErrUnreachable)
	switch {
	case err == nil:
	case cannot && (!ci.On() || os.Getenv(require) != "1"):
		t.Skipf("skipping: %s cannot be installed from npm here: %v (CI=true %s=1 makes this a failure)", client, err, require)
	case cannot:
		t.Fatalf("%s is required here (CI, %s=1) but cannot be installed: %v", client, require, err)
	default:
		t.Fatal(err)
	}
}
