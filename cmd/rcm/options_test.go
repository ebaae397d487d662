package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/proxy"
)

func parseServe(t *testing.T, args ...string) (proxy.Config, error) {
	t.Helper()
	var c proxy.Config
	err := parseOptions("serve", args, serveOptions(&c), true, "")
	return c, err
}

func TestServePrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rcm.json")
	os.WriteFile(file, []byte(`{"listen":"127.0.0.1:1","mode":"router","threshold":0.5,"header_timeout":"3s","max_body":100}`), 0o600)
	t.Setenv("RCM_MODE", "native")
	t.Setenv("RCM_THRESHOLD", "0.6")
	c, err := parseServe(t, "--config", file, "--threshold", "0.9")
	if err != nil {
		t.Fatal(err)
	}
	// file < environment < flags
	if c.Listen != "127.0.0.1:1" || c.Mode != "native" || c.Threshold != 0.9 || c.HeaderTimeout != 3*time.Second || c.MaxBody != 100 {
		t.Fatalf("%+v", c)
	}
}

func TestServeConfigErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		`{"upstream_key":"sk"}`: "secrets are read from the environment",
		`{"lisen":"x"}`:         "unknown key",
		`{"threshold":"high"}`:  "threshold",
		`[1]`:                   "cannot unmarshal",
	}
	for body, want := range cases {
		file := filepath.Join(dir, "c.json")
		os.WriteFile(file, []byte(body), 0o600)
		if _, err := parseServe(t, "--config", file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", body, err, want)
		}
	}
	t.Setenv("RCM_HEADER_TIMEOUT", "soon")
	if _, err := parseServe(t); err == nil || !strings.Contains(err.Error(), "RCM_HEADER_TIMEOUT") {
		t.Errorf("bad env value: %v", err)
	}
}

func TestUpstreamKeyFromEnvironment(t *testing.T) {
	t.Setenv("RCM_UPSTREAM_KEY", "sk-env")
	c, err := parseServe(t)
	if err != nil || c.UpstreamKey != "sk-env" {
		t.Fatalf("%v %q", err, c.UpstreamKey)
	}
}

// The shipped example config must load and validate.
func TestExampleConfig(t *testing.T) {
	c, err := parseServe(t, "--config", "../../configs/rcm.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
