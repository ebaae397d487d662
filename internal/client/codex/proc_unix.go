//go:build unix

package codex

import (
	"os/exec"
	"syscall"
)

// configure puts codex in a process group of its own, so that cancelling
// kills the tools it started too.
func configure(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return kill(cmd) }
}

// kill ends cmd's process group.
func kill(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return errNoProcess
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
