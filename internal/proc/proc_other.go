//go:build !unix

package proc

import "os/exec"

// Group: without process groups only the client itself is killed.
func Group(*exec.Cmd) {}

// Kill ends cmd's process.
func Kill(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}

// Terminate ends cmd's process: there is no gentler portable signal.
func Terminate(cmd *exec.Cmd) error { return Kill(cmd) }
