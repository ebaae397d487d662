package compaction

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rcm-dev/rcm/transcript"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from golden file:\ngot:\n%s", name, got)
	}
}

func editWith(keep []int, replace map[int][]byte) transcript.Edit {
	return transcript.Edit{Keep: keep, Replace: replace}
}
