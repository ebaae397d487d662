package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/bench/replay"
	"github.com/rcm-dev/rcm/bench/spec"
)

type benchRow struct {
	Mode          string
	Threshold     float64
	N             int
	FocusRecall   *float64 `json:"focus_recall"`
	TokensRatio   *float64 `json:"tokens_ratio"`
	Contamination *float64 `json:"contamination"`
	Routing       *float64 `json:"routing_accuracy"`
	Fallback      *float64 `json:"fallback_rate"`
	Prefix        *float64 `json:"prefix_stability"`
	Overhead      *float64 `json:"overhead_ms_p50"`
	PostSwitch    struct {
		N           int
		TokensRatio *float64 `json:"tokens_ratio"`
	} `json:"post_switch"`
	CompactionCoverage *float64 `json:"compaction_coverage"`
	CompactionSections *float64 `json:"compaction_sections"`
	RecordBytes        struct {
		Mean    *float64  `json:"mean"`
		Max     *float64  `json:"max"`
		PerTurn *float64  `json:"per_turn"`
		ByTurn  []float64 `json:"by_turn"`
	} `json:"record_bytes"`
}

type benchResults struct {
	Sessions    int
	Completed   int `json:"completed_sessions"`
	Interrupted bool
	Results     []benchRow
}

func readResults(t *testing.T, dir string) benchResults {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r benchResults
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestBenchReplayRealProxy replays the small spec through the real proxy
// (proxy.New) in every mode: native is the unchanged baseline. Each switch
// session ends with OpenCode's compaction call, whose recent tail (300
// tokens: the last two distractor turns and the submit) is left out of its
// prompt: native's call misses those distractors' requests; rcm's rewrite
// names every task's requirements. rcm's focus record grows per focus turn.
func TestBenchReplayRealProxy(t *testing.T) {
	dir := t.TempDir()
	stdout, _ := os.Create(filepath.Join(dir, "stdout"))
	stderr, _ := os.Create(filepath.Join(dir, "stderr"))
	t.Setenv("RCM_BENCH_THRESHOLDS", "0.8") // the environment twin
	err := benchReplay(context.Background(), []string{"--spec", "../../bench/replay/testdata/replay_small.json", "--compaction-tail", "300", "--out", filepath.Join(dir, "out")}, stdout, stderr)
	if err != nil {
		t.Fatal(err)
	}
	r := readResults(t, filepath.Join(dir, "out"))
	if r.Completed != r.Sessions || r.Interrupted || len(r.Results) != 3 {
		t.Fatalf("completed %d of %d, interrupted %v, %d rows", r.Completed, r.Sessions, r.Interrupted, len(r.Results))
	}
	for _, row := range r.Results {
		if row.Threshold != 0.8 || row.N != r.Sessions || row.FocusRecall == nil || row.TokensRatio == nil ||
			row.Contamination == nil || row.Fallback == nil || row.Prefix == nil || row.Overhead == nil ||
			row.PostSwitch.N != r.Sessions || row.PostSwitch.TokensRatio == nil {
			t.Errorf("%s: %+v", row.Mode, row)
		}
	}
	native := r.Results[0]
	if native.Mode != "native" || *native.FocusRecall != 1 || *native.TokensRatio != 1 || *native.Contamination <= 0 || native.Routing != nil {
		t.Errorf("native: recall %v, tokens ratio %v, contamination %v, routing %v", *native.FocusRecall, *native.TokensRatio, *native.Contamination, native.Routing)
	}
	for _, row := range r.Results {
		cov, sec, rb := row.CompactionCoverage, row.CompactionSections, row.RecordBytes
		if cov == nil || sec == nil {
			t.Fatalf("%s: compaction coverage %v, sections %v", row.Mode, cov, sec)
		}
		switch row.Mode {
		case "rcm":
			if *cov != 1 || *sec != 1 || rb.Mean == nil || rb.Max == nil || rb.PerTurn == nil || *rb.PerTurn <= 0 || len(rb.ByTurn) != 3 ||
				!(rb.ByTurn[0] < rb.ByTurn[1] && rb.ByTurn[1] < rb.ByTurn[2]) || *rb.Max < rb.ByTurn[2] {
				t.Errorf("rcm: compaction coverage %v, sections %v, record bytes %+v (want coverage 1, sections 1, a record growing over 3 focus turns)", *cov, *sec, rb)
			}
		default:
			if !(*cov < 1) || *sec != 0 || rb.Mean != nil || len(rb.ByTurn) != 0 {
				t.Errorf("%s: compaction coverage %v, sections %v, record bytes %+v (want coverage < 1, no sections, no records)", row.Mode, *cov, *sec, rb)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "out", "report.md"))
	if err != nil || !strings.Contains(string(md), "| native | 0.80 |") || !strings.Contains(string(md), "## Compaction and state records") {
		t.Errorf("report.md: %v\n%s", err, md)
	}
	out, _ := os.ReadFile(filepath.Join(dir, "stdout"))
	if !strings.Contains(string(out), "native") || !strings.Contains(string(out), "tokens ratio") {
		t.Errorf("stdout has no summary table:\n%s", out)
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "stderr")); !strings.Contains(string(log), "replay: 100%") || !strings.Contains(string(log), " calls  ") {
		t.Errorf("stderr has no progress lines in a replay's words:\n%s", log)
	}
}

func TestBenchReplayRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--spec", "a.json", "--data", "d"},
		{"--thresholds", "0.8,x"},
		{"--modes", "fast"},
		{"--spec", "does-not-exist.json"},
		{"--overhead", "maybe"},
		{"--compaction-tail", "many"},
		{"--layout", "nested"},
		{"--layout", "shared", "--returns", "numbered"},
		{"--tags", "new"},
		{"--sessions", "../../testdata/real-sessions", "--tags", "new,meta"},
	} {
		dir := t.TempDir()
		f, _ := os.Create(filepath.Join(dir, "log"))
		if err := benchReplay(context.Background(), append(args, "--out", dir), f, f); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestBenchReplayShared replays the demo pack's sessions in one shared
// checkout through the router: results.json says so and every call is
// routed.
func TestBenchReplayShared(t *testing.T) {
	out := t.TempDir()
	stdout, _ := os.Create(filepath.Join(out, "stdout"))
	defer stdout.Close()
	err := benchReplay(context.Background(), []string{"--layout", "shared", "--modes", "router", "--thresholds", "0.8", "--overhead", "false", "--out", out}, stdout, stdout)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, replay.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var res replay.Results
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Layout != spec.LayoutShared || len(res.Summaries) != 1 || res.Summaries[0].RoutedN == 0 {
		t.Fatalf("results: layout %q, %d summaries", res.Layout, len(res.Summaries))
	}
}

// TestBenchReplayInterrupt runs the demo pack as a process and interrupts
// it: it stops, says so, and writes the sessions that finished.
func TestBenchReplayInterrupt(t *testing.T) {
	dir := t.TempDir()
	cmd := command("bench", "replay", "--modes", "native,rcm", "--thresholds", "0.8", "--out", dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "replay:") { // plain progress lines: not a terminal
			break
		}
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	if err == nil || !strings.Contains(rest.String(), "interrupted") {
		t.Errorf("exit %v, stderr:\n%s", err, rest.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to stop", d)
	}
	r := readResults(t, dir)
	if !r.Interrupted || r.Completed >= r.Sessions {
		t.Errorf("results.json: interrupted %v, %d of %d sessions", r.Interrupted, r.Completed, r.Sessions)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.md")); err != nil {
		t.Error(err)
	}
}

// TestBenchReplayDemo runs the embedded demo pack (native only, to stay
// quick): it replays every session and leaves the pack's attribution with
// the results.
func TestBenchReplayDemo(t *testing.T) {
	out := t.TempDir()
	stdout, _ := os.Create(filepath.Join(out, "stdout"))
	defer stdout.Close()
	err := benchReplay(context.Background(), []string{"--modes", "native", "--thresholds", "0.8", "--overhead", "false", "--out", out}, stdout, stdout)
	if err != nil {
		t.Fatal(err)
	}
	table, _ := os.ReadFile(stdout.Name())
	attr, err := os.ReadFile(filepath.Join(out, "ATTRIBUTION.txt"))
	if err != nil || !strings.Contains(string(attr), "mini-swe-agent") || !strings.Contains(string(attr), "MIT") {
		t.Fatalf("attribution: %v\n%s", err, attr)
	}
	if !strings.Contains(string(table), "replaying 10 sessions of demo") || !strings.Contains(string(table), "  native ") {
		t.Fatalf("output:\n%s", table)
	}
}

// TestBenchReplayRouterModel: with --router-model the proxy's router asks
// the classifier, answered by the scripted upstream, about the calls the
// cheap signals leave below the threshold (1.0: nearly all), and the
// replay reports its calls, tokens and time; without it, none.
func TestBenchReplayRouterModel(t *testing.T) {
	run := func(t *testing.T, args ...string) map[string]any {
		out := filepath.Join(t.TempDir(), "out")
		args = append([]string{"--spec", "../../bench/replay/testdata/replay_small.json", "--modes", "router", "--thresholds", "1.0", "--overhead", "false", "--out", out}, args...)
		log, _ := os.Create(filepath.Join(t.TempDir(), "log"))
		defer log.Close()
		if err := benchReplay(context.Background(), args, log, log); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(out, replay.ResultsFile))
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Results []struct {
				Classifier map[string]any `json:"classifier"`
			} `json:"results"`
		}
		if err := json.Unmarshal(raw, &res); err != nil || len(res.Results) != 1 {
			t.Fatalf("results.json: %v, %d rows", err, len(res.Results))
		}
		return res.Results[0].Classifier
	}
	t.Run("with", func(t *testing.T) {
		t.Setenv("RCM_BENCH_ROUTER_MODEL", "scripted-classifier") // the environment twin
		c := run(t)
		if !(c["calls"].(float64) > 0) || c["errors"].(float64) != 0 || !(c["prompt_tokens"].(float64) > 0) ||
			!(c["completion_tokens"].(float64) > 0) || !(c["ms"].(float64) > 0) || c["ms_per_call"] == nil {
			t.Errorf("classifier: %v; want calls without errors, tokens and time", c)
		}
	})
	t.Run("without", func(t *testing.T) {
		c := run(t)
		if c["calls"].(float64) != 0 || c["prompt_tokens"].(float64) != 0 || c["ms"].(float64) != 0 || c["ms_per_call"] != nil {
			t.Errorf("classifier: %v; want none", c)
		}
	})
}
