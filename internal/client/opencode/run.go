package opencode

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/rcm-dev/rcm/internal/proc"
)

// waitDelay bounds how long Wait waits for output pipes held open by
// children after the process itself has ended.
const waitDelay = 5 * time.Second

// Run runs `bin args...` (for example "run", "-m", "rcm/m1", "list",
// "files") in dir with env (see Env) and returns its standard output.
// Cancelling ctx kills OpenCode and everything it started; so does its
// normal exit, so that no background child outlives the call. The error
// carries the end of standard error.
//
// `opencode run` quotes an argument containing spaces literally: pass a
// prompt's words as separate arguments, or use Server.
func Run(ctx context.Context, bin, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := proc.Run(cmd, waitDelay)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return stdout.Bytes(), fmt.Errorf("opencode %v: %w: %s", args, err, tail(stderr.String(), 800))
	}
	return stdout.Bytes(), nil
}
