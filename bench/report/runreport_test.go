package report

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/bench/run"
	"github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/bench/stat"
)

func runOf(session, cond, mode string, thr float64, rep int, resolved bool, calls int) run.Result {
	return run.Result{Key: run.Key(session, cond, mode, thr, rep), Session: session, Kind: spec.KindFar, Condition: cond,
		Mode: mode, Threshold: stat.Num(thr), Repeat: rep, Score: run.Score{Resolved: resolved}, Requests: 2, Answered: 2,
		Usage: run.Usage{Calls: calls, ForwardedTokens: calls * 100}}
}

// TestReport: Gap, multipliers, flips and intervals on known runs.
func TestReport(t *testing.T) {
	nan := math.NaN()
	var runs []run.Result
	for _, s := range []string{"a", "b", "c", "d"} {
		for rep := range 2 {
			runs = append(runs,
				runOf(s, run.ConditionBase, spec.ModeNative, nan, rep, true, 10),
				runOf(s, run.ConditionSwitch, spec.ModeNative, nan, rep, s == "a", 30), // native loses 3 of 4 with switches
				runOf(s, run.ConditionBase, spec.ModeRCM, 0.8, rep, true, 10),
				runOf(s, run.ConditionSwitch, spec.ModeRCM, 0.8, rep, s != "d", 20))
		}
	}
	rep := New(runs)
	if len(rep.Arms) != 2 || rep.Sessions != 4 || rep.Repeats != 2 || rep.Runs != 32 {
		t.Fatalf("report %+v", rep)
	}
	nat, rcm := rep.Arms[0], rep.Arms[1]
	if nat.Mode != spec.ModeNative || nat.ResUnint != 1 || nat.ResSwitch != 0.25 || nat.Gap != 0.75 || nat.Lost != 6 {
		t.Errorf("native %+v", nat)
	}
	if rcm.ResSwitch != 0.75 || rcm.Gap != 0.25 || rcm.CallsX != 2 || rcm.CallsVsNative != stat.Num(20.0/30) || rcm.ForwardedX != 2 {
		t.Errorf("rcm %+v", rcm)
	}
	if !math.IsNaN(float64(rcm.PromptX)) {
		t.Errorf("prompt multiplier %v without usage, want null", rcm.PromptX)
	}
	// Sessions differ, so the interval is wide and contains the estimate.
	if !(rcm.GapCI[0] < rcm.Gap && rcm.Gap < rcm.GapCI[1]) || nat.ResUnintCI != [2]stat.Num{1, 1} {
		t.Errorf("intervals: rcm gap %v %v, native res_unint %v", rcm.Gap, rcm.GapCI, nat.ResUnintCI)
	}
	if len(rep.Flips) != 2 || rep.Flips[1] != (Flip{Mode: spec.ModeRCM, Threshold: 0.8, Condition: run.ConditionSwitch, Pairs: 8, Lost: 0, Gained: 4}) {
		t.Errorf("flips %+v", rep.Flips)
	}
	if rcm.Far.Gap != rcm.Gap || rcm.Near.Sessions != 0 {
		t.Errorf("near/far %+v %+v", rcm.Near, rcm.Far)
	}
}

// TestWrite writes every report file.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	var lines []byte
	for _, r := range []run.Result{runOf("a", run.ConditionBase, spec.ModeNative, math.NaN(), 0, true, 4), runOf("a", run.ConditionSwitch, spec.ModeRouter, 0.5, 0, false, 8)} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(append(lines, b...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, run.RunsFile), lines, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, RunReportFile))
	for _, want := range []string{"| native | – | 1 | 1 / 0 | 1.000 |", "## Cost", RunResolvedSVG} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{RunSummaryFile, RunSummaryCSV, RunsCSV, RunResolvedSVG, RunSweepSVG} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestReportCachedUsage: the upstream's cached prompt tokens are reported
// raw, and billed at DefaultCachePrice beside native's.
func TestReportCachedUsage(t *testing.T) {
	nan := math.NaN()
	withUsage := func(r run.Result, prompt, cached int) run.Result {
		r.UsageCalls, r.PromptTokens, r.CachedTokens = r.Calls, prompt, cached
		return r
	}
	runs := []run.Result{
		withUsage(runOf("a", run.ConditionBase, spec.ModeNative, nan, 0, true, 10), 1000, 900),
		withUsage(runOf("a", run.ConditionSwitch, spec.ModeNative, nan, 0, true, 30), 10000, 9000),
		withUsage(runOf("a", run.ConditionBase, spec.ModeRCM, 0.8, 0, true, 10), 1000, 800),
		withUsage(runOf("a", run.ConditionSwitch, spec.ModeRCM, 0.8, 0, true, 20), 4000, 3000),
	}
	rep := New(runs)
	rcm := rep.Arms[1]
	if rcm.Cached != [2]stat.Num{800, 3000} {
		t.Errorf("cached %v", rcm.Cached)
	}
	// rcm: 200 + 80 and 1000 + 300; native switch: 1000 + 900.
	if rcm.Billed != [2]stat.Num{280, 1300} || rcm.BilledVsNative != stat.Num(1300.0/1900) {
		t.Errorf("billed %v, vs native %v", rcm.Billed, rcm.BilledVsNative)
	}
}
