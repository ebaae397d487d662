package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCoreFreeOfBench: no package outside bench and cmd, nor its tests,
// imports the bench application; what they share with it lives in
// internal/ (issue 12).
func TestCoreFreeOfBench(t *testing.T) {
	const bench = "github.com/rcm-dev/rcm/bench"
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(root, path)
			switch {
			case rel == "bench", rel == "cmd", d.Name() == "testdata",
				rel != "." && strings.HasPrefix(d.Name(), "."):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == bench || strings.HasPrefix(p, bench+"/") {
				t.Errorf("%s imports %s: core packages and their tests must not depend on the bench", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d Go files under %s: the walk missed the core packages", files, root)
	}
}
