//go:build unix

package proc

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGroupCancelKillsChildren: cancelling a grouped command kills what it
// started too (a background sleep that would otherwise outlive it).
func TestGroupCancelKillsChildren(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 60 & echo $! > "+pidFile+"; wait")
	Group(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := readPID(t, pidFile)
	cancel()
	cmd.Wait()
	wantGone(t, child)
}

// TestRunKillsLeftovers: a client that ends normally leaves no background
// child behind.
func TestRunKillsLeftovers(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $! > "+pidFile)
	if err := Run(cmd, time.Second); err != nil {
		t.Fatal(err)
	}
	wantGone(t, readPID(t, pidFile))
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	for i := 0; i < 500; i++ {
		b, _ := os.ReadFile(file)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the child never started")
	return 0
}

// wantGone waits for pid to end. A killed child is reaped by init; until
// then it may be a zombie, which signal 0 still finds.
func wantGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(b), ") Z ") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("child %d outlived its group", pid)
}

// TestKillUnstartedOrGone: killing a command never started, or a group
// already gone, is not an error.
func TestKillUnstartedOrGone(t *testing.T) {
	if err := Kill(exec.Command("true")); err != nil {
		t.Errorf("unstarted: %v", err)
	}
	cmd := exec.Command("true")
	Group(cmd)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if err := Terminate(cmd); err != nil {
		t.Errorf("gone: %v", err)
	}
}

func TestHead(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	for in, want := range map[string]string{
		"  npm ERR! 404\n": "npm ERR! 404",
		long:               strings.Repeat("é", 300) + "...",
	} {
		if got := Head(in); got != want {
			t.Errorf("Head(%.20q) = %.20q…, want %.20q…", in, got, want)
		}
	}
}

func TestTail(t *testing.T) {
	tl := &Tail{Max: 8}
	for _, w := range []string{"abc", "defgh", "ijkl"} {
		if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("write %q: %d %v", w, n, err)
		}
	}
	if got := tl.String(); got != "efghijkl" {
		t.Fatalf("kept %q, want the last 8 bytes", got)
	}
}

func TestFreePort(t *testing.T) {
	port, err := FreePort()
	if err != nil || port <= 0 {
		t.Fatal(port, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("port %d not free: %v", port, err)
	}
	ln.Close()
}
