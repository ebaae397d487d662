//go:build !unix

package opencode

import "os/exec"

// configure: without process groups only OpenCode itself is killed.
func configure(cmd *exec.Cmd) { cmd.WaitDelay = waitDelay }

func terminate(cmd *exec.Cmd) error { return kill(cmd) }

func kill(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
