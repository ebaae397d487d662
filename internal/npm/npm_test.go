package npm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestUnreachable(t *testing.T) {
	for out, want := range map[string]bool{
		"npm error code ENOTFOUND\nnpm error network request to https://registry failed": true,
		"npm error code EAI_AGAIN": true,
		"npm error code E404\nnpm error 404 Not Found - GET https://registry/opencode-ai": false,
		"": false,
	} {
		if got := Unreachable(out); got != want {
			t.Errorf("Unreachable(%q) = %v, want %v", out, got, want)
		}
	}
}

// TestInstallReuses: an install whose binary reports the version is used
// as it is, without npm (PATH holds none here).
func TestInstallReuses(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "node_modules", ".bin", "tool")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	write := func(version string) {
		if err := os.WriteFile(bin, []byte("#!/bin/sh\necho tool-cli "+version+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", "/nonexistent")
	write("1.2.3")
	if got, err := Install(context.Background(), dir, "tool", "1.2.3", filepath.Join("node_modules", ".bin", "tool")); err != nil || got != bin {
		t.Errorf("Install = %q, %v; want the cached %s", got, err, bin)
	}
	// Another version is not reused: npm would run, and there is none.
	write("1.2.30")
	if _, err := Install(context.Background(), dir, "tool", "1.2.3", filepath.Join("node_modules", ".bin", "tool")); !errors.Is(err, ErrNoNPM) {
		t.Errorf("wrong version cached: %v, want ErrNoNPM", err)
	}
}
