//go:build unix

package proc

import (
	"os/exec"
	"syscall"
)

// Group puts cmd in a process group of its own and, when cmd was made by
// exec.CommandContext, makes cancelling kill the whole group.
func Group(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cmd.Cancel != nil {
		cmd.Cancel = func() error { return Kill(cmd) }
	}
}

// Kill ends cmd's process group at once.
func Kill(cmd *exec.Cmd) error { return signal(cmd, syscall.SIGKILL) }

// Terminate asks cmd's process group to end.
func Terminate(cmd *exec.Cmd) error { return signal(cmd, syscall.SIGTERM) }

// signal sends sig to cmd's process group. A command never started, or a
// group already gone, is not an error.
func signal(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}
