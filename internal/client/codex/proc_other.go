//go:build !unix

package codex

import "os/exec"

func configure(*exec.Cmd) {}

func kill(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return errNoProcess
	}
	return cmd.Process.Kill()
}
