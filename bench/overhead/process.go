package overhead

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rcm-dev/rcm/internal/proc"
)

// FreeAddr returns a loopback host:port that was free when asked, for a
// proxy started in its own process.
func FreeAddr() (string, error) {
	port, err := proc.FreePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// Start runs cmd, a proxy told to listen on addr, and returns once addr
// accepts connections (within 10 s). stop ends the process (SIGTERM, then
// SIGKILL after 5 s) and waits for it. The process's output is kept for
// the error when it exits or does not listen in time.
func Start(ctx context.Context, cmd *exec.Cmd, addr string) (stop func(), err error) {
	out := &proc.Tail{Max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	name := cmd.Args[0]
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return stop, nil
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("overhead: %s exited before it listened on %s: %s", name, addr, output(out))
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	stop()
	return nil, fmt.Errorf("overhead: %s did not listen on %s in 10 s: %s", name, addr, output(out))
}

// output is what a process wrote, for an error.
func output(t *proc.Tail) string {
	if s := strings.TrimSpace(t.String()); s != "" {
		return s
	}
	return "(no output)"
}
