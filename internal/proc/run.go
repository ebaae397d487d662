package proc

import (
	"os/exec"
	"time"
)

// Run runs cmd in a process group of its own, then kills what is left of
// the group (a tool's background jobs), so that no child outlives the
// client's turn. wait bounds how long Run waits for output pipes that
// such children hold open after the client itself has ended.
func Run(cmd *exec.Cmd, wait time.Duration) error {
	cmd.WaitDelay = wait
	Group(cmd)
	err := cmd.Run()
	Kill(cmd)
	return err
}
