package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/memory"
)

// TestMain lets tests run the real command in a child process: the test
// binary re-executes itself with RCM_TEST_MAIN set and the arguments in
// RCM_TEST_ARGS (separated by newlines).
func TestMain(m *testing.M) {
	if os.Getenv("RCM_TEST_MAIN") == "1" {
		os.Args = append([]string{"rcm"}, strings.Split(os.Getenv("RCM_TEST_ARGS"), "\n")...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RCM_TEST_MAIN=1", "RCM_TEST_ARGS="+strings.Join(args, "\n"))
	return cmd
}

var listening = regexp.MustCompile(`listen=(\S+)`)

// TestServeLifecycle runs `rcm serve` as a process: it answers, a second
// process on the same store fails fast with a clear error, and SIGTERM shuts
// it down cleanly with the store closed.
func TestServeLifecycle(t *testing.T) {
	db := filepath.Join(t.TempDir(), "rcm.db")
	cmd := command("serve", "--listen", "127.0.0.1:0", "--db", db, "--upstream", "http://127.0.0.1:9/v1")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var addr string
	for sc.Scan() {
		if m := listening.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	if addr == "" {
		t.Fatal("serve did not report its address")
	}
	go io.Copy(io.Discard, stderr)
	resp, err := http.Get("http://" + addr + "/rcm/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	second := command("serve", "--listen", "127.0.0.1:0", "--db", db)
	out, err := second.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another rcm process") {
		t.Fatalf("second process on the same store: err=%v out=%s", err, out)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	st, err := memory.Open(db, memory.Options{})
	if err != nil {
		t.Fatalf("store not released: %v", err)
	}
	st.Close()
}

func TestVersion(t *testing.T) {
	out, err := command("version").Output()
	if err != nil || !strings.HasPrefix(string(out), "rcm ") {
		t.Fatalf("%s %v", out, err)
	}
}
