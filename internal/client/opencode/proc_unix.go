//go:build unix

package opencode

import (
	"os/exec"
	"syscall"
)

// configure puts cmd in a process group of its own, so that cancelling it
// also ends what OpenCode spawned (shells, language servers, npm).
func configure(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cmd.Cancel != nil { // made by CommandContext
		cmd.Cancel = func() error { return signalGroup(cmd, syscall.SIGKILL) }
	}
	cmd.WaitDelay = waitDelay
}

// signalGroup sends sig to cmd's process group. A group already gone is not
// an error.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}

func terminate(cmd *exec.Cmd) error { return signalGroup(cmd, syscall.SIGTERM) }
func kill(cmd *exec.Cmd) error      { return signalGroup(cmd, syscall.SIGKILL) }
