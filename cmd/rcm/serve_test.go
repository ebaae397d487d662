package main

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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
	selfCommand = func(args ...string) (*exec.Cmd, error) { return command(args...), nil }
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
	cmd, addr := serveArgs(t, "--db", db, "--upstream", "http://127.0.0.1:9/v1")
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
	if err := exited(cmd); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
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

// TestHelp: rcm --help lists every bench subcommand, and asking any
// command or subcommand for help prints its usage and exits 0.
func TestHelp(t *testing.T) {
	top, err := command("--help").Output()
	if err != nil {
		t.Fatalf("rcm --help: %v", err)
	}
	bench, err := command("bench", "--help").Output()
	if err != nil {
		t.Fatalf("rcm bench --help: %v\n%s", err, bench)
	}
	asks := [][]string{{"help"}, {"-h"}, {"bench", "help"}, {"serve", "--help"}, {"inspect", "--help"}, {"store", "--help"}}
	for _, sub := range []string{"replay", "run", "report", "upstream", "spec", "proxy", "floor"} {
		for _, out := range [][]byte{top, bench} {
			if !strings.Contains(string(out), "rcm bench "+sub+" ") {
				t.Errorf("bench %s not listed in:\n%s", sub, out)
			}
		}
		asks = append(asks, []string{"bench", sub, "--help"})
	}
	for _, args := range asks {
		if out, err := command(args...).CombinedOutput(); err != nil || !strings.Contains(strings.ToLower(string(out)), "usage") {
			t.Errorf("rcm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// serveArgs starts `rcm serve` on a free port with args and returns the
// process, killed at the end of the test, and its address.
func serveArgs(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, addr, _ := serveLogged(t, args...)
	return cmd, addr
}

// serveLogged is serveArgs that also returns the lines the process logs.
func serveLogged(t *testing.T, args ...string) (*exec.Cmd, string, <-chan string) {
	t.Helper()
	cmd := command(append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr, lines := startServe(t, cmd)
	return cmd, addr, lines
}

// exited waits for cmd to exit (at most 20 s) and returns its error.
func exited(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		return errors.New("still running 20 s after the signal")
	}
}

// streaming starts a call through addr whose upstream streams
// until the test ends, and returns once its first event arrived.
func streaming(t *testing.T, addr string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/native/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[]}`))
	req.Header.Set("X-RCM-Session", "ses_stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatalf("first event: %q %v", line, err)
	}
	return resp
}

func foreverStream(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(up.Close)
	return up
}

// TestShutdownIsBounded: a call still streaming does not hold the process
// past --shutdown-timeout; its client sees the cut.
func TestShutdownIsBounded(t *testing.T) {
	up := foreverStream(t)
	cmd, addr := serveArgs(t, "--db", filepath.Join(t.TempDir(), "rcm.db"), "--upstream", up.URL+"/v1", "--shutdown-timeout", "300ms")
	resp := streaming(t, addr)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := exited(cmd); err != nil {
		t.Fatalf("exit after SIGTERM with a call streaming: %v", err)
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("the cut stream ended cleanly for its client")
	}
}

// TestSecondSignalExitsAtOnce: during a long shutdown a second signal ends
// the process without waiting.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	up := foreverStream(t)
	cmd, addr := serveArgs(t, "--db", filepath.Join(t.TempDir(), "rcm.db"), "--upstream", up.URL+"/v1", "--shutdown-timeout", "1h")
	streaming(t, addr)
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(200 * time.Millisecond) // the first signal starts the shutdown
	cmd.Process.Signal(syscall.SIGINT)
	err := exited(cmd)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("after a second signal: %v, want exit status 1", err)
	}
}
