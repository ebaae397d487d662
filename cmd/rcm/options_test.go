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

// TestThresholdZeroRefused: a threshold of 0, however it is given (flag,
// environment, config file, the bench's --thresholds), is refused with an
// error, never replaced by the default.
func TestThresholdZeroRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rcm.json")
	os.WriteFile(file, []byte(`{"threshold":0}`), 0o600)
	for name, args := range map[string][]string{"flag": {"--threshold", "0"}, "file": {"--config", file}, "0.0": {"--threshold", "0.0"}} {
		if c, err := parseServe(t, args...); err == nil || !strings.Contains(err.Error(), "(0, 1]") {
			t.Errorf("%s: threshold %v, err %v; want it refused", name, c.Threshold, err)
		}
	}
	t.Run("env", func(t *testing.T) {
		t.Setenv("RCM_THRESHOLD", "0")
		if c, err := parseServe(t); err == nil {
			t.Errorf("RCM_THRESHOLD=0: threshold %v, no error", c.Threshold)
		}
	})
	var rc replayConfig
	if err := parseOptions("bench replay", []string{"--thresholds", "0.8,0"}, replayOptions(&rc), false, ""); err == nil {
		t.Errorf("bench replay --thresholds 0.8,0: %v, no error", rc.thresholds)
	}
	var runc runConfig
	if err := parseOptions("bench run", []string{"--thresholds", "0"}, runOptions(&runc), false, ""); err == nil {
		t.Errorf("bench run --thresholds 0: %v, no error", runc.thresholds)
	}
	if c, err := parseServe(t, "--threshold", "0.05"); err != nil || c.Threshold != 0.05 {
		t.Errorf("--threshold 0.05: %v %v", c.Threshold, err)
	}
}
