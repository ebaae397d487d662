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
