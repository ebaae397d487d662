package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/pgtest"
	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/proxy"
)

func TestRetentionOptions(t *testing.T) {
	t.Setenv("RCM_MAX_STORE", "512MiB")
	c, err := parseServe(t, "--retain", "7d")
	if err != nil {
		t.Fatal(err)
	}
	if c.Retain != 7*24*time.Hour || c.MaxStore != 512<<20 {
		t.Fatalf("retain %v, max-store %d", c.Retain, c.MaxStore)
	}
	for in, want := range map[string]int64{"2GB": 2e9, "1G": 1 << 30, "1048576": 1 << 20, "1.5 MiB": 3 << 19} {
		var n int64
		if err := sizeOpt(&n)(in); err != nil || n != want {
			t.Errorf("size %q = %d, %v; want %d", in, n, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1MB", "1PB", "1e30"} {
		var n int64
		if err := sizeOpt(&n)(bad); err == nil {
			t.Errorf("size %q accepted as %d", bad, n)
		}
	}
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "0.5d": 12 * time.Hour, "90m": 90 * time.Minute} {
		var d time.Duration
		if err := daysOpt(&d)(in); err != nil || d != want {
			t.Errorf("retain %q = %v, %v; want %v", in, d, err, want)
		}
	}
	// Defaults, and too small values refused with the flag's name.
	var def proxy.Config
	def.Defaults()
	if err := def.Validate(); err != nil || def.Retain != proxy.DefaultRetain || def.MaxStore != proxy.DefaultMaxStore {
		t.Fatalf("defaults: %v %v %d", err, def.Retain, def.MaxStore)
	}
	for _, args := range [][]string{{"--retain", "1s"}, {"--max-store", "1KB"}} {
		c, err := parseServe(t, args...)
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestStoreCompact runs `rcm store compact` as a process: it refuses while
// the store is held (as by a running proxy) and compacts it once free.
func TestStoreCompact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rcm.db")
	s, err := memory.Open(path, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(w *memory.Tx) error { return w.Touch("s1", "", time.Now()) }); err != nil {
		t.Fatal(err)
	}
	out, err := command("store", "compact", "--db", path).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another rcm process holds the store") {
		t.Fatalf("compact of a held store: %v\n%s", err, out)
	}
	s.Close()
	out, err = command("store", "compact", "--db", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "compacted "+path) {
		t.Fatalf("compact: %v\n%s", err, out)
	}
	s, err = memory.Open(path, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok, err := s.Session("s1"); !ok || err != nil {
		t.Fatalf("session lost by compaction: %v %v", ok, err)
	}
}

// startServe starts an `rcm serve` command and returns the address it
// reports and each later line of its log on lines (closed at its end).
func startServe(t *testing.T, cmd *exec.Cmd) (addr string, lines <-chan string) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var first []string
	for sc.Scan() {
		first = append(first, sc.Text())
		if m := listening.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	if addr == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("serve did not report its address:\n%s", strings.Join(first, "\n"))
	}
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		for _, l := range first {
			ch <- l
		}
		for sc.Scan() {
			select {
			case ch <- sc.Text():
			default: // nobody reads: drop, never block the server
			}
		}
	}()
	return addr, ch
}

// TestServeLogRedacted: rcm serve's log never shows a secret, such as the
// password of an upstream URL.
func TestServeLogRedacted(t *testing.T) {
	cmd := command("serve", "--listen", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "rcm.db"),
		"--upstream", "http://rcm:hunter2hunter2@127.0.0.1:9/v1")
	_, lines := startServe(t, cmd)
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	start := <-lines
	if strings.Contains(start, "hunter2hunter2") || !strings.Contains(start, "rcm:[redacted:url-password]@127.0.0.1:9") {
		t.Fatalf("start line: %s", start)
	}
}

// TestStoreMigrateCheck: rcm store check fails on a database rcm has not
// migrated, rcm store migrate brings it to this rcm's schema (once: a
// second run changes nothing), and check then passes.
func TestStoreMigrateCheck(t *testing.T) {
	dsn := pgtest.Schema(t)
	run := func(args ...string) (string, error) {
		out, err := command(append([]string{"store"}, append(args, "--store", dsn)...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := run("check"); err == nil || !strings.Contains(out, "schema version 0") {
		t.Fatalf("check before migrate: %v\n%s", err, out)
	}
	if out, err := run("migrate"); err != nil || !strings.Contains(out, "schema version 0 -> 1") {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	if out, err := run("migrate"); err != nil || !strings.Contains(out, "schema version 1 -> 1") {
		t.Fatalf("migrate again: %v\n%s", err, out)
	}
	if out, err := run("check"); err != nil || !strings.Contains(out, "schema version 1 (this rcm's: 1), 0 sessions") {
		t.Fatalf("check after migrate: %v\n%s", err, out)
	}
}
