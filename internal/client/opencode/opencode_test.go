package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestConfigGolden(t *testing.T) {
	got, err := Config{Proxy: "http://127.0.0.1:8787"}.JSON()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "opencode.json")
	if *update {
		os.WriteFile(golden, append(got, '\n'), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(got, '\n'), want) {
		t.Errorf("config differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
}

func TestConfigProviders(t *testing.T) {
	c := Config{
		Proxy:  "http://10.0.0.2:9000/v1/", // a base URL with /v1 is taken as the root
		Modes:  []string{"rcm", "native"},
		Models: []Model{{ID: "gpt-x", Name: "GPT X", Context: 4000}, {ID: "small", Output: 100}},
		Model:  "rcm/gpt-x", SmallModel: "native/small",
		APIKey: "sk-1",
	}
	b, err := c.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"provider.rcm.options.baseURL":               "http://10.0.0.2:9000/rcm/v1",
		"provider.native.options.baseURL":            "http://10.0.0.2:9000/native/v1",
		"provider.rcm.options.apiKey":                "sk-1",
		"provider.rcm.npm":                           "@ai-sdk/openai-compatible",
		"provider.native.models.gpt-x.name":          "GPT X",
		"provider.native.models.gpt-x.limit.context": "4000",
		"provider.native.models.gpt-x.limit.output":  "8192",
		"provider.rcm.models.small.name":             "small",
		"provider.rcm.models.small.limit.context":    "128000",
		"provider.rcm.models.small.limit.output":     "100",
		"provider.rcm.models.small.tool_call":        "true",
		"provider.router":                            "",
		"model":                                      "rcm/gpt-x",
		"small_model":                                "native/small",
		"permission.bash":                            "allow",
		"permission.edit":                            "allow",
		"autoupdate":                                 "false",
		"share":                                      "disabled",
	} {
		if got := gjson.GetBytes(b, path).String(); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if !gjson.GetBytes(b, "provider.native.options.apiKey").Exists() {
		t.Error("apiKey missing")
	}
	b, _ = Config{Proxy: "http://h:1"}.JSON()
	if gjson.GetBytes(b, "provider.rcm.options.apiKey").Exists() {
		t.Error("an empty APIKey must send none (rcm then injects its upstream key)")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{}, "proxy"},
		{Config{Proxy: "127.0.0.1:8787"}, "proxy"},
		{Config{Proxy: "ftp://h"}, "proxy"},
		{Config{Proxy: "http://h", Modes: []string{"fast"}}, `mode "fast"`},
		{Config{Proxy: "http://h", Models: []Model{{}}}, "model"},
		{Config{Proxy: "http://h", Models: []Model{{ID: "m", Context: -1}}}, "limits"},
		{Config{Proxy: "http://h", Model: "native/other"}, `"native/other" is not a declared`},
		{Config{Proxy: "http://h", Modes: []string{"rcm"}, SmallModel: "native/m1"}, `"native/m1"`},
	} {
		if _, err := tc.c.JSON(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %s", tc.c, err, tc.want)
		}
	}
}

func TestConfigWrite(t *testing.T) {
	home := t.TempDir()
	if err := (Config{Proxy: "http://h:1"}).Write(GlobalConfig(home)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(home, ".config", "opencode", "opencode.json"))
	if err != nil || !json.Valid(b) {
		t.Fatalf("%v: %s", err, b)
	}
	if err := (Config{}).Write(GlobalConfig(home)); err == nil {
		t.Error("an invalid config was written")
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("HOME", "/home/someone")
	t.Setenv("XDG_CONFIG_HOME", "/home/someone/.config")
	t.Setenv("OPENCODE_CONFIG", "/home/someone/opencode.json")
	t.Setenv("npm_config_registry", "https://registry.example")
	t.Setenv("RCM_KEEP", "yes")
	home := filepath.Join(t.TempDir(), "h")
	env, err := Env(home)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string][]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = append(vars[k], v)
	}
	for k, want := range map[string]string{
		"HOME":                             home,
		"XDG_CONFIG_HOME":                  filepath.Join(home, ".config"),
		"XDG_DATA_HOME":                    filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME":                   filepath.Join(home, ".cache"),
		"XDG_STATE_HOME":                   filepath.Join(home, ".local", "state"),
		"OPENCODE_DISABLE_AUTOUPDATE":      "1",
		"OPENCODE_DISABLE_MODELS_FETCH":    "1",
		"OPENCODE_DISABLE_SHARE":           "1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD":    "1",
		"OPENCODE_DISABLE_CLAUDE_CODE":     "1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
		"RCM_KEEP":                         "yes",
	} {
		if !slices.Equal(vars[k], []string{want}) {
			t.Errorf("%s = %q, want exactly %q", k, vars[k], want)
		}
	}
	for _, k := range []string{"OPENCODE_CONFIG", "npm_config_registry"} {
		if vars[k] != nil {
			t.Errorf("%s leaked into the isolated environment", k)
		}
	}
	rc, err := os.ReadFile(filepath.Join(home, ".npmrc"))
	if err != nil || string(rc) != "registry=http://127.0.0.1:9/\n" {
		t.Errorf(".npmrc = %q, %v", rc, err)
	}
	for _, d := range []string{".config", ".local/share", ".cache", ".local/state"} {
		if fi, err := os.Stat(filepath.Join(home, d)); err != nil || !fi.IsDir() {
			t.Errorf("%s not created: %v", d, err)
		}
	}
}

func TestInstallWithoutNPM(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	dir := filepath.Join(t.TempDir(), "oc")
	if _, err := Install(t.Context(), dir, Version); !errors.Is(err, ErrNoNPM) {
		t.Fatalf("error %v, want ErrNoNPM", err)
	}
	// A directory without the completion marker is not reused.
	fakeInstall(t, dir)
	os.Remove(filepath.Join(dir, marker))
	if _, err := Install(t.Context(), dir, Version); !errors.Is(err, ErrNoNPM) {
		t.Fatalf("incomplete install reused: %v", err)
	}
}

func TestInstallReuses(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // npm must not be needed
	dir := filepath.Join(t.TempDir(), "oc")
	want := fakeInstall(t, dir)
	got, err := Install(t.Context(), dir, Version)
	if err != nil || got != want {
		t.Fatalf("Install = %q, %v; want %q", got, err, want)
	}
}

func TestInstallBadVersion(t *testing.T) {
	for _, v := range []string{"", "latest", "^1.18.0", "1.18", "1.18.33 && rm -rf /"} {
		if _, err := Install(t.Context(), t.TempDir(), v); err == nil || !strings.Contains(err.Error(), "exact release") {
			t.Errorf("version %q: error %v", v, err)
		}
	}
}

func TestInstallUnreachableRegistry(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not installed")
	}
	// A closed loopback port as registry and an empty npm cache: npm must
	// fail at once and say why.
	t.Setenv("npm_config_registry", "http://127.0.0.1:9/")
	t.Setenv("npm_config_cache", t.TempDir())
	t.Setenv("npm_config_fetch_retries", "0")
	dir := filepath.Join(t.TempDir(), "oc")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	_, err := Install(ctx, dir, Version)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("error %v, want ErrUnreachable", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("failed install left %s behind (%v)", dir, err)
	}
	if m, _ := filepath.Glob(dir + ".tmp-*"); len(m) > 0 {
		t.Errorf("failed install left %v behind", m)
	}
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/c")
	if d, err := DefaultCacheDir("1.2.3"); err != nil || d != filepath.Join("/c", "rcm", "opencode-1.2.3") {
		t.Errorf("DefaultCacheDir = %q, %v", d, err)
	}
}

// fakeInstall lays out a completed install in dir and returns its binary.
func fakeInstall(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, binRel)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho "+Version+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, marker), []byte(Version), 0o644); err != nil {
		t.Fatal(err)
	}
	return bin
}
