package report

import (
	"github.com/rcm-dev/rcm/bench/run"
	"github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/bench/stat"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runOf(session, cond, mode string, thr float64, rep int, resolved bool, calls int) run.RunResult {
	return run.RunResult{Key: run.RunKey(session, cond, mode, thr, rep), Session: session, Kind: spec.KindFar, Condition: cond,
		Mode: mode, Threshold: stat.Num(thr), Repeat: rep, Score: run.Score{Resolved: resolved}, Requests: 2, Answered: 2,
		Usage: run.Usage{Calls: calls, ForwardedTokens: calls * 100}}
}

// TestReport: Gap, multipliers, flips and intervals on known runs.
func TestReport(t *testing.T) {
	nan := math.NaN()
	var runs []run.RunResult
	for _, s := range []string{"a", "b", "c", "d"} {
		for rep := range 2 {
			runs = append(runs,
				runOf(s, run.ConditionBase, spec.ModeNative, nan, rep, true, 10),
				runOf(s, run.ConditionSwitch, spec.ModeNative, nan, rep, s == "a", 30), // native loses 3 of 4 with switches
				runOf(s, run.ConditionBase, spec.ModeRCM, 0.8, rep, true, 10),
				runOf(s, run.ConditionSwitch, spec.ModeRCM, 0.8, rep, s != "d", 20))
		}
	}
	rep := Report(runs)
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

// TestRunsFile: a last line cut short by a crash is ignored on read and
// cut before the next append; a bad line elsewhere is an error.
func TestRunsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), run.RunsFile)
	good := `{"key":"s|base|native|-|0","resolved":true,"threshold":null}` + "\n"
	os.WriteFile(path, []byte(good+`{"key":"s|switch`), 0o644)
	runs, err := run.ReadRuns(path)
	if err != nil || len(runs) != 1 || !math.IsNaN(float64(runs[0].Threshold)) {
		t.Fatalf("%+v, %v", runs, err)
	}
	l, err := run.OpenRunLog(path)
	if err != nil {
		t.Fatal(err)
	}
	r := runOf("s", run.ConditionSwitch, spec.ModeRCM, 0.5, 0, false, 3)
	if err := l.Append(&r); err != nil {
		t.Fatal(err)
	}
	l.Close()
	runs, err = run.ReadRuns(path)
	if err != nil || len(runs) != 2 || runs[1].Key != "s|switch|rcm|0.5|0" {
		t.Fatalf("%+v, %v", runs, err)
	}
	os.WriteFile(path, []byte("not json\n"+good), 0o644)
	if _, err := run.ReadRuns(path); err == nil || !strings.Contains(err.Error(), ":1:") {
		t.Errorf("bad first line: %v", err)
	}
}

// TestWriteRunReport writes every report file.
func TestWriteRunReport(t *testing.T) {
	dir := t.TempDir()
	l, _ := run.OpenRunLog(filepath.Join(dir, run.RunsFile))
	for _, r := range []run.RunResult{runOf("a", run.ConditionBase, spec.ModeNative, math.NaN(), 0, true, 4), runOf("a", run.ConditionSwitch, spec.ModeRouter, 0.5, 0, false, 8)} {
		l.Append(&r)
	}
	l.Close()
	if _, err := WriteRunReport(dir); err != nil {
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
	withUsage := func(r run.RunResult, prompt, cached int) run.RunResult {
		r.UsageCalls, r.PromptTokens, r.CachedTokens = r.Calls, prompt, cached
		return r
	}
	runs := []run.RunResult{
		withUsage(runOf("a", run.ConditionBase, spec.ModeNative, nan, 0, true, 10), 1000, 900),
		withUsage(runOf("a", run.ConditionSwitch, spec.ModeNative, nan, 0, true, 30), 10000, 9000),
		withUsage(runOf("a", run.ConditionBase, spec.ModeRCM, 0.8, 0, true, 10), 1000, 800),
		withUsage(runOf("a", run.ConditionSwitch, spec.ModeRCM, 0.8, 0, true, 20), 4000, 3000),
	}
	rep := Report(runs)
	rcm := rep.Arms[1]
	if rcm.Cached != [2]stat.Num{800, 3000} {
		t.Errorf("cached %v", rcm.Cached)
	}
	// rcm: 200 + 80 and 1000 + 300; native switch: 1000 + 900.
	if rcm.Billed != [2]stat.Num{280, 1300} || rcm.BilledVsNative != stat.Num(1300.0/1900) {
		t.Errorf("billed %v, vs native %v", rcm.Billed, rcm.BilledVsNative)
	}
}
