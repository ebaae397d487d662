package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	benchspec "github.com/rcm-dev/rcm/bench/spec"
)

// TestBenchSpec: the written spec loads and validates, and rewriting it
// gives the same bytes.
func TestBenchSpec(t *testing.T) {
	var out bytes.Buffer
	if err := benchSpec(nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	spec, err := benchspec.Parse(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	demo, _ := benchspec.Demo()
	if len(spec.Tasks) != len(demo.Tasks) || len(spec.Sessions) != len(demo.Sessions) {
		t.Fatalf("%d tasks, %d sessions", len(spec.Tasks), len(spec.Sessions))
	}
	dir := t.TempDir()
	first := filepath.Join(dir, "spec.json")
	os.WriteFile(first, out.Bytes(), 0o644)
	second := filepath.Join(dir, "again.json")
	if err := benchSpec([]string{"--spec", first, "--out", second}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(second); !bytes.Equal(b, out.Bytes()) {
		t.Fatal("rewriting a spec changed it")
	}
	if err := benchSpec([]string{"--spec", first, "--data", dir}, io.Discard, io.Discard); err == nil {
		t.Fatal("--spec with --data accepted")
	}
}
