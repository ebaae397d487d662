//go:build unix

package proc

import (
	"context"
	"errors"
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
	var child int
	for i := 0; i < 500 && child == 0; i++ {
		b, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(10 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("the child never started")
	}
	cancel()
	cmd.Wait()
	// The killed child is reaped by init; until then it may be a zombie,
	// which signal 0 still finds, so wait for it to go.
	for i := 0; i < 500; i++ {
		if err := syscall.Kill(child, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat"); err == nil && strings.Contains(string(b), ") Z ") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("child %d outlived its cancelled group", child)
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
