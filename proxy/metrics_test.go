package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// TestMetricsPromtool: /rcm/metrics, after calls in every mode, passes
// `promtool check metrics` (Debian's prometheus package; .ci/run installs
// it, and under CI the test fails without it) and holds the histograms of
// the README: rcm's added latency, time to first byte and the token ratio
// per mode, the store's lag, and the Go runtime and process collectors.
func TestMetricsPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed; .ci/run installs it (apt-get install prometheus)")
		}
		t.Skip("promtool is not installed (apt-get install prometheus); CI runs this test")
	}
	got := callModes(t, "native", "router", "rcm")
	for _, want := range []string{
		`rcm_added_latency_seconds_count{mode="native"} 1`,
		`rcm_added_latency_seconds_count{mode="rcm"} 1`,
		`rcm_upstream_ttfb_seconds_count{mode="router"} 1`,
		`rcm_forwarded_token_ratio_bucket{mode="native",le="1"} 1`,
		`rcm_forwarded_token_ratio_count{mode="router"} 1`,
		"rcm_store_lag_seconds_count 3",
		`kind="agent",mode="rcm",status="2xx"} 1`,
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("metrics lack %q", want)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(got)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\nmetrics:\n%s", err, out, got)
	}
}

// TestDashboardSeries: every series configs/grafana-dashboard.json
// queries is one /rcm/metrics serves.
func TestDashboardSeries(t *testing.T) {
	b, err := os.ReadFile("../configs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	got := callModes(t, "native", "router", "rcm")
	name := regexp.MustCompile(`\b(rcm|go|process)_[a-z_]+`)
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, s := range name.FindAllString(tg.Expr, -1) {
				n++
				if !bytes.Contains(got, []byte("\n"+s)) {
					t.Errorf("panel %q queries %s, which /rcm/metrics lacks", p.Title, s)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("the dashboard queries nothing")
	}
}

// callModes makes a call in each of modes through a proxy (the same body,
// a session named in its headers) and returns its /rcm/metrics once the
// calls' writes are done.
func callModes(t *testing.T, modes ...string) []byte {
	t.Helper()
	srv, h := setup(t, &recorder{}, nil)
	body, hdr, path := load(t, "continue_request")
	for _, mode := range modes {
		hh := hdr.Clone()
		hh.Set(HeaderMode, mode)
		resp := post(t, srv.URL+path, body, hh)
		io.Copy(io.Discard, resp.Body)
	}
	h.after.Wait()
	return metricsText(t, srv.URL)
}

// lagQuantile returns the upper bound of the bucket holding the q-quantile
// of the store lag (+Inf past the last bucket, 0 with no observation).
func (m *metrics) lagQuantile(q float64) float64 {
	h := m.lagHistogram()
	n := h.GetSampleCount()
	if n == 0 {
		return 0
	}
	for _, b := range h.GetBucket() {
		if float64(b.GetCumulativeCount()) >= q*float64(n) {
			return b.GetUpperBound()
		}
	}
	return math.Inf(1)
}

// lagHistogram reads rcm_store_lag_seconds.
func (m *metrics) lagHistogram() *dto.Histogram {
	var d dto.Metric
	if err := m.lag.Write(&d); err != nil {
		panic(err)
	}
	return d.GetHistogram()
}
