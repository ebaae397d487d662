package npm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// TestInstallSerialized: two installs of one package into one directory at
// once run npm once; the second waits for the first and reuses its binary
// instead of running (or reinstalling) a binary npm is still writing.
func TestInstallSerialized(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tool-1.2.3")
	fake := t.TempDir()
	runs := filepath.Join(fake, "runs")
	// The fake npm: counts its runs, then writes the tool slowly enough
	// that the other install starts while it is at work.
	script := `#!/bin/sh
echo run >> "` + runs + `"
while [ "$1" != "--prefix" ]; do shift; done
mkdir -p "$2/node_modules/.bin"
sleep 1
printf '#!/bin/sh\necho tool 1.2.3\n' > "$2/node_modules/.bin/tool"
chmod +x "$2/node_modules/.bin/tool"
`
	if err := os.WriteFile(filepath.Join(fake, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", fake+":/usr/bin:/bin")
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := Install(context.Background(), dir, "tool", "1.2.3", filepath.Join("node_modules", ".bin", "tool"))
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if b, err := os.ReadFile(runs); err != nil || strings.Count(string(b), "run") != 1 {
		t.Errorf("npm ran %q (%v), want once", b, err)
	}
}
