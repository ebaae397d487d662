package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// dataDir is shared/data as laid out beside the repository (CI clones the
// repository with shared/ beside it).
const dataDir = "../../shared/data"

// sharedData returns the path of a file under shared/data, skipping the test
// when the data is absent.
func sharedData(t testing.TB, rel ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{dataDir}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared data absent (%v): run with the repository beside shared/", err)
	}
	return p
}

func readShared(t testing.TB, rel ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(sharedData(t, rel...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// eachShared calls fn with every file of a shared/data folder matching
// pattern, after checking that there are want of them.
func eachShared(t *testing.T, dir, pattern string, want int, fn func(path string, b []byte)) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(sharedData(t, dir), pattern))
	if len(files) != want {
		t.Fatalf("%s: %d files, want %d", dir, len(files), want)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fn(f, b)
	}
}
