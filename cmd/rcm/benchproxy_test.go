package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestBenchProxy(t *testing.T) {
	var out, log strings.Builder
	err := benchProxy(context.Background(), []string{"--caddy", "false", "--sizes", "8,64", "--calls", "2", "--agents", "2",
		"--rounds", "1", "--duration", "100ms", "--pause", "0"}, &out, &log)
	if err != nil {
		t.Fatal(err, log.String())
	}
	for _, want := range []string{"### Latency, 8 KB body", "### Latency, 64 KB body", "| direct |", "| relay |", "| bare |", "| native |", "| router |", "| rcm |", "### Throughput",
		"### Store waits", "- latency phases: ", "- throughput phase (no pause): "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "| caddy |") {
		t.Error("--caddy false still measured caddy")
	}
	// Every call of every target succeeded: the errors column (last) is 0.
	// Not the bare floor's: a plain httputil.ReverseProxy cuts an answer
	// now and then (golang/go#40747, which rcm works around).
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Split(strings.Trim(line, "| "), "|")
		switch strings.TrimSpace(f[0]) {
		case "direct", "relay", "native", "router", "rcm":
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

// TestReadWaits: the store waits come from the proxy's metrics, with how
// each ended; the report gives those since an earlier reading.
func TestReadWaits(t *testing.T) {
	metrics := "# TYPE rcm_store_waits_total counter\n" +
		`rcm_store_waits_total{outcome="ahead"} 7` + "\n" +
		`rcm_store_waits_total{outcome="done"} 2` + "\n" +
		"rcm_store_wait_seconds_sum 0.0125\nrcm_store_wait_seconds_count 9\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/rcm/metrics" {
			io.WriteString(w, metrics)
		}
	}))
	defer srv.Close()
	w := readWaits(srv.URL)
	if w.n != 9 || w.sum != 12500*time.Microsecond || w.by["ahead"] != 7 || w.by["done"] != 2 {
		t.Fatalf("read %+v", w)
	}
	if got := w.outcomes(storeWaits{by: map[string]int{"ahead": 3, "done": 2}}); got != " (ahead 4)" {
		t.Fatalf("since the earlier reading: %q", got)
	}
	if got := w.outcomes(w); got != "" {
		t.Fatalf("none since: %q", got)
	}
	if w := readWaits("http://127.0.0.1:9"); w.n != 0 {
		t.Fatalf("from no proxy: %+v", w)
	}
}

func TestBenchFloorArgs(t *testing.T) {
	for _, args := range [][]string{nil, {"--upstream", "127.0.0.1:9"}, {"tunnel", "--upstream", "127.0.0.1:9", "--listen", "127.0.0.1:0"},
		{"relay", "--listen", "127.0.0.1:0"}, {"bare", "--upstream", "127.0.0.1:9"}} {
		if err := benchFloor(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
