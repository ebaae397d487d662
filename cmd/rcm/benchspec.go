package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	benchspec "github.com/rcm-dev/rcm/bench/spec"
)

// benchSpec writes a bench spec: the demo pack's, one built from a data
// folder (--data, --format, --seed), or a --spec file validated and
// normalised. It is how a user gets a spec to edit or to give `bench run`.
func benchSpec(args []string, stdout, stderr io.Writer) error {
	c := replayConfig{format: benchspec.FormatMiniSWE, seed: 1}
	out := ""
	opts := []option{
		{flag: "spec", env: "RCM_BENCH_SPEC", help: "bench spec file to validate and rewrite", set: stringOpt(&c.spec)},
		{flag: "data", env: "RCM_BENCH_DATA", help: "build the spec from every task of a data folder laid out as shared/data", set: stringOpt(&c.data)},
		{flag: "format", env: "RCM_BENCH_FORMAT", help: "trajectory format under --data: mini-swe-agent or openhands (default mini-swe-agent)", set: stringOpt(&c.format)},
		{flag: "seed", env: "RCM_BENCH_SEED", help: "assembly seed for --data (default 1)", set: intOpt(&c.seed)},
		{flag: "out", env: "RCM_BENCH_SPEC_OUT", help: "file to write (default: standard output)", set: stringOpt(&out)},
	}
	if err := parseOptions("bench spec", args, opts, false, "Usage: rcm bench spec [flags]\n\nWrites a bench spec (bench/SPEC.md): the demo pack's by default, or one assembled from --data."); err != nil {
		return err
	}
	spec, err := loadSpec(&c, stderr)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return fmt.Errorf("bench spec: %w", err)
	}
	b = append(b, '\n')
	if out == "" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("bench spec: %w", err)
	}
	fmt.Fprintf(stderr, "wrote %s: %d tasks, %d sessions\n", out, len(spec.Tasks), len(spec.Sessions))
	return nil
}
