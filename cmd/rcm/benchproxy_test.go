package main

import (
	"context"
	"strings"
	"testing"
)

func TestBenchProxy(t *testing.T) {
	var out, log strings.Builder
	err := benchProxy(context.Background(), []string{"--caddy", "false", "--sizes", "8,64", "--calls", "2", "--agents", "2",
		"--rounds", "1", "--duration", "100ms", "--pause", "0"}, &out, &log)
	if err != nil {
		t.Fatal(err, log.String())
	}
	for _, want := range []string{"### Latency, 8 KB body", "### Latency, 64 KB body", "| direct |", "| bare |", "| native |", "| router |", "| rcm |", "### Throughput",
		"### Store waits", "- latency phases: ", "- throughput phase (no pause): "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "| caddy |") {
		t.Error("--caddy false still measured caddy")
	}
	// Every call of every target succeeded: the errors column (last) is 0.
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Split(strings.Trim(line, "| "), "|")
		switch strings.TrimSpace(f[0]) {
		case "direct", "bare", "native", "router", "rcm":
			if e := strings.TrimSpace(f[len(f)-1]); e != "0" {
				t.Errorf("%s errors in %q", e, line)
			}
		}
	}
}

func TestBenchProxyFlags(t *testing.T) {
	for _, args := range [][]string{{"--sizes", "x"}, {"--sizes", "0"}, {"--caddy", "maybe"}, {"--pause", "soon"}, {"--jitter", "2"}, {"--jitter", "x"}} {
		var out, log strings.Builder
		if err := benchProxy(context.Background(), append(args, "--rounds", "1"), &out, &log); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
