package report

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rcm-dev/rcm/bench/plot"
	"github.com/rcm-dev/rcm/bench/replay"
	"github.com/rcm-dev/rcm/bench/run"
	"github.com/rcm-dev/rcm/bench/spec"
	benchstat "github.com/rcm-dev/rcm/bench/stat"
)

// Files Write puts beside RunsFile.
const (
	RunReportFile  = "run_report.md"
	RunSummaryFile = "run_summary.json"
	RunSummaryCSV  = "run_summary.csv"
	RunsCSV        = "runs.csv"
	RunResolvedSVG = "run_resolved_by_mode.svg"
	RunSweepSVG    = "run_threshold_sweep.svg"
)

// bootstraps is the number of bootstrap resamples behind each interval.
const bootstraps = 2000

// Report is what `rcm bench report` computes from a RunsFile.
type Report struct {
	Runs       int          `json:"runs"`
	Sessions   int          `json:"sessions"`
	Repeats    int          `json:"repeats"`
	Modes      []string     `json:"modes"`
	Thresholds []float64    `json:"thresholds"`
	Arms       []ArmSummary `json:"arms"`
	// Flips compare each arm with native on the same (session, condition,
	// repeat): runs native resolved and the arm did not (Lost), and the
	// reverse (Gained).
	Flips []Flip `json:"flips_vs_native"`
}

// ArmSummary is one mode at one threshold over every run of it.
type ArmSummary struct {
	Mode      string        `json:"mode"`
	Threshold benchstat.Num `json:"threshold"`
	Split                   // all sessions
	Near      Split         `json:"near"`
	Far       Split         `json:"far"`

	// Means per run, each condition: model calls, the proxy's forwarded
	// token estimate, and the upstream's prompt tokens with and without
	// the cached ones (null when the upstream reported no usage).
	Calls     [2]benchstat.Num `json:"calls"` // [base, switch]
	Forwarded [2]benchstat.Num `json:"forwarded_tokens"`
	Prompt    [2]benchstat.Num `json:"prompt_tokens"`
	Uncached  [2]benchstat.Num `json:"uncached_prompt_tokens"`
	// Multipliers of S_switch over S_base, and of this arm's S_switch over
	// native's.
	CallsX            benchstat.Num `json:"calls_multiplier"`
	ForwardedX        benchstat.Num `json:"forwarded_tokens_multiplier"`
	PromptX           benchstat.Num `json:"prompt_tokens_multiplier"`
	UncachedX         benchstat.Num `json:"uncached_prompt_tokens_multiplier"`
	CallsVsNative     benchstat.Num `json:"calls_vs_native"`
	ForwardedVsNative benchstat.Num `json:"forwarded_tokens_vs_native"`
	PromptVsNative    benchstat.Num `json:"prompt_tokens_vs_native"`
	// The upstream's cached prompt tokens as it reported them (OpenAI
	// cached_tokens, Anthropic cache_read_input_tokens), and the prompt
	// tokens billed with them at DefaultCachePrice (uncached + price x
	// cached): means per run, each condition, and the switch condition's
	// billed tokens over native's.
	Cached         [2]benchstat.Num `json:"cached_prompt_tokens"`
	Billed         [2]benchstat.Num `json:"billed_prompt_tokens"`
	BilledVsNative benchstat.Num    `json:"billed_prompt_tokens_vs_native"`
	// Resolved flips between the conditions, paired by session and
	// repeat: resolved uninterrupted but not with switches (Lost), and
	// the reverse (Gained).
	Lost   int `json:"flips_lost"`
	Gained int `json:"flips_gained"`
	// Focus requests answered (share), and the distractors' completion in
	// S_switch: share of their requests answered, share of their
	// checkouts changed.
	Answered           benchstat.Num `json:"answered"`
	DistractorAnswered benchstat.Num `json:"distractor_answered"`
	DistractorChanged  benchstat.Num `json:"distractor_changed"`
}

// Split is resolution over a set of sessions: Res_unint (S_base),
// Res_switch and Gap = Res_unint - Res_switch, each with its bootstrap 95%
// interval over sessions (focus tasks) and, within each, repeats.
type Split struct {
	Sessions    int              `json:"sessions"`
	BaseRuns    int              `json:"base_runs"`
	SwitchRuns  int              `json:"switch_runs"`
	ResUnint    benchstat.Num    `json:"res_unint"`
	ResUnintCI  [2]benchstat.Num `json:"res_unint_ci"`
	ResSwitch   benchstat.Num    `json:"res_switch"`
	ResSwitchCI [2]benchstat.Num `json:"res_switch_ci"`
	Gap         benchstat.Num    `json:"gap"`
	GapCI       [2]benchstat.Num `json:"gap_ci"`
}

// Flip counts resolved flips of an arm against native.
type Flip struct {
	Mode      string        `json:"mode"`
	Threshold benchstat.Num `json:"threshold"`
	Condition string        `json:"condition"`
	Pairs     int           `json:"pairs"`
	Lost      int           `json:"lost"`
	Gained    int           `json:"gained"`
}

// armKey groups runs by arm.
type armKey struct {
	mode string
	thr  string
}

func keyOf(r *run.Result) armKey {
	t := "-"
	if !math.IsNaN(float64(r.Threshold)) {
		t = strconv.FormatFloat(float64(r.Threshold), 'f', -1, 64)
	}
	return armKey{r.Mode, t}
}

// New computes the Report of runs (a later run with the same key
// replaces an earlier one).
func New(runs []run.Result) *Report {
	byKey := map[string]int{}
	var rs []*run.Result
	for i := range runs {
		if j, ok := byKey[runs[i].Key]; ok {
			rs[j] = &runs[i]
			continue
		}
		byKey[runs[i].Key] = len(rs)
		rs = append(rs, &runs[i])
	}
	rep := &Report{Runs: len(rs)}
	sessions := map[string]bool{}
	arms := map[armKey][]*run.Result{}
	var order []armKey
	for _, r := range rs {
		sessions[r.Session] = true
		rep.Repeats = max(rep.Repeats, r.Repeat+1)
		k := keyOf(r)
		if _, ok := arms[k]; !ok {
			order = append(order, k)
		}
		arms[k] = append(arms[k], r)
		if !slices.Contains(rep.Modes, r.Mode) {
			rep.Modes = append(rep.Modes, r.Mode)
		}
		if t := float64(r.Threshold); !math.IsNaN(t) && !slices.Contains(rep.Thresholds, t) {
			rep.Thresholds = append(rep.Thresholds, t)
		}
	}
	rep.Sessions = len(sessions)
	modeRank := func(m string) int {
		if i := slices.Index(spec.DefaultModes, m); i >= 0 {
			return i
		}
		return len(spec.DefaultModes)
	}
	slices.SortFunc(rep.Modes, func(a, b string) int { return cmp.Or(cmp.Compare(modeRank(a), modeRank(b)), cmp.Compare(a, b)) })
	slices.Sort(rep.Thresholds)
	slices.SortFunc(order, func(a, b armKey) int {
		return cmp.Or(cmp.Compare(modeRank(a.mode), modeRank(b.mode)), cmp.Compare(a.mode, b.mode), cmp.Compare(a.thr, b.thr))
	})
	var native []*run.Result
	for _, k := range order {
		if k.mode == spec.ModeNative {
			native = arms[k]
		}
	}
	for _, k := range order {
		rep.Arms = append(rep.Arms, armSummary(arms[k], native))
		if k.mode != spec.ModeNative && native != nil {
			rep.Flips = append(rep.Flips, flips(arms[k], native)...)
		}
	}
	return rep
}

func armSummary(rs, native []*run.Result) ArmSummary {
	a := ArmSummary{Mode: rs[0].Mode, Threshold: rs[0].Threshold}
	a.Split = split(rs)
	var near, far []*run.Result
	for _, r := range rs {
		if r.Kind == spec.KindNear {
			near = append(near, r)
		} else {
			far = append(far, r)
		}
	}
	a.Near, a.Far = split(near), split(far)
	cond := [2]string{run.ConditionBase, run.ConditionSwitch}
	for i, c := range cond {
		a.Calls[i] = runMean(rs, c, func(r *run.Result) (float64, bool) { return float64(r.Calls), true })
		a.Forwarded[i] = runMean(rs, c, func(r *run.Result) (float64, bool) { return float64(r.ForwardedTokens), true })
		a.Prompt[i] = runMean(rs, c, func(r *run.Result) (float64, bool) { return float64(r.PromptTokens), r.UsageCalls > 0 })
		a.Uncached[i] = runMean(rs, c, func(r *run.Result) (float64, bool) {
			return float64(r.PromptTokens - r.CachedTokens), r.UsageCalls > 0
		})
		a.Cached[i] = runMean(rs, c, func(r *run.Result) (float64, bool) { return float64(r.CachedTokens), r.UsageCalls > 0 })
		a.Billed[i] = runMean(rs, c, billedPrompt)
	}
	ratio := func(x, y benchstat.Num) benchstat.Num { return benchstat.Num(float64(x) / float64(y)) }
	a.CallsX, a.ForwardedX = ratio(a.Calls[1], a.Calls[0]), ratio(a.Forwarded[1], a.Forwarded[0])
	a.PromptX, a.UncachedX = ratio(a.Prompt[1], a.Prompt[0]), ratio(a.Uncached[1], a.Uncached[0])
	nat := func(get func(*run.Result) (float64, bool)) benchstat.Num {
		return runMean(native, run.ConditionSwitch, get)
	}
	a.CallsVsNative = ratio(a.Calls[1], nat(func(r *run.Result) (float64, bool) { return float64(r.Calls), true }))
	a.ForwardedVsNative = ratio(a.Forwarded[1], nat(func(r *run.Result) (float64, bool) { return float64(r.ForwardedTokens), true }))
	a.PromptVsNative = ratio(a.Prompt[1], nat(func(r *run.Result) (float64, bool) { return float64(r.PromptTokens), r.UsageCalls > 0 }))
	a.BilledVsNative = ratio(a.Billed[1], nat(billedPrompt))

	type pair struct {
		session string
		repeat  int
	}
	base := map[pair]bool{}
	for _, r := range rs {
		if r.Condition == run.ConditionBase {
			base[pair{r.Session, r.Repeat}] = r.Resolved
		}
	}
	var answered, req, dAns, dReq, dChanged, dN float64
	for _, r := range rs {
		answered += float64(r.Answered)
		req += float64(r.Requests)
		for _, d := range r.Distractors {
			dAns += float64(d.Answered)
			dReq += float64(d.Requests)
			dN++
			if d.Changed {
				dChanged++
			}
		}
		if r.Condition != run.ConditionSwitch {
			continue
		}
		if b, ok := base[pair{r.Session, r.Repeat}]; ok {
			switch {
			case b && !r.Resolved:
				a.Lost++
			case !b && r.Resolved:
				a.Gained++
			}
		}
	}
	a.Answered, a.DistractorAnswered, a.DistractorChanged = benchstat.Num(answered/req), benchstat.Num(dAns/dReq), benchstat.Num(dChanged/dN)
	return a
}

// runMean is the mean of get over the runs of condition c that have a value.
func runMean(rs []*run.Result, c string, get func(*run.Result) (float64, bool)) benchstat.Num {
	var xs []float64
	for _, r := range rs {
		if r.Condition != c {
			continue
		}
		if v, ok := get(r); ok {
			xs = append(xs, v)
		}
	}
	return benchstat.Mean(xs)
}

// split computes resolution and its intervals over rs.
func split(rs []*run.Result) Split {
	type cell struct{ base, sw []float64 }
	cells := map[string]*cell{}
	var ids []string
	var s Split
	for _, r := range rs {
		c := cells[r.Session]
		if c == nil {
			c = &cell{}
			cells[r.Session] = c
			ids = append(ids, r.Session)
		}
		v := 0.0
		if r.Resolved {
			v = 1
		}
		if r.Condition == run.ConditionBase {
			c.base = append(c.base, v)
			s.BaseRuns++
		} else {
			c.sw = append(c.sw, v)
			s.SwitchRuns++
		}
	}
	s.Sessions = len(ids)
	slices.Sort(ids)
	stat := func(pick func(i int) *cell, n int, draw func([]float64) []float64) (u, w float64) {
		var bs, ss []float64
		for i := range n {
			c := pick(i)
			bs = append(bs, draw(c.base)...)
			ss = append(ss, draw(c.sw)...)
		}
		return float64(benchstat.Mean(bs)), float64(benchstat.Mean(ss))
	}
	same := func(xs []float64) []float64 { return xs }
	u, w := stat(func(i int) *cell { return cells[ids[i]] }, len(ids), same)
	s.ResUnint, s.ResSwitch, s.Gap = benchstat.Num(u), benchstat.Num(w), benchstat.Num(u-w)
	// Two-level bootstrap: sessions with replacement, then each drawn
	// session's repeats with replacement (a fixed seed: reports are
	// reproducible).
	rng := rand.New(rand.NewPCG(1, uint64(len(rs))))
	resample := func(xs []float64) []float64 {
		out := make([]float64, len(xs))
		for i := range xs {
			out[i] = xs[rng.IntN(len(xs))]
		}
		return out
	}
	var us, ws, gs []float64
	if len(ids) > 0 {
		for range bootstraps {
			u, w := stat(func(int) *cell { return cells[ids[rng.IntN(len(ids))]] }, len(ids), resample)
			if !math.IsNaN(u) {
				us = append(us, u)
			}
			if !math.IsNaN(w) {
				ws = append(ws, w)
			}
			if !math.IsNaN(u - w) {
				gs = append(gs, u-w)
			}
		}
	}
	ci := func(xs []float64) [2]benchstat.Num {
		return [2]benchstat.Num{benchstat.Num(benchstat.Percentile(xs, 2.5)), benchstat.Num(benchstat.Percentile(xs, 97.5))}
	}
	s.ResUnintCI, s.ResSwitchCI, s.GapCI = ci(us), ci(ws), ci(gs)
	return s
}

// flips pairs an arm's runs with native's on (session, condition, repeat).
func flips(rs, native []*run.Result) []Flip {
	type pair struct {
		session, condition string
		repeat             int
	}
	nat := map[pair]bool{}
	for _, r := range native {
		nat[pair{r.Session, r.Condition, r.Repeat}] = r.Resolved
	}
	var out []Flip
	for _, c := range []string{run.ConditionBase, run.ConditionSwitch} {
		f := Flip{Mode: rs[0].Mode, Threshold: rs[0].Threshold, Condition: c}
		for _, r := range rs {
			n, ok := nat[pair{r.Session, r.Condition, r.Repeat}]
			if r.Condition != c || !ok {
				continue
			}
			f.Pairs++
			switch {
			case n && !r.Resolved:
				f.Lost++
			case !n && r.Resolved:
				f.Gained++
			}
		}
		if f.Pairs > 0 {
			out = append(out, f)
		}
	}
	return out
}

// Write reads dir/RunsFile and writes the report files beside it.
func Write(dir string) (*Report, error) {
	runs, err := run.ReadRuns(filepath.Join(dir, run.RunsFile))
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("bench: %s: no runs yet", filepath.Join(dir, run.RunsFile))
	}
	rep := New(runs)
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	var md, sum, per bytes.Buffer
	rep.markdown(&md)
	if err := rep.summaryCSV(&sum); err != nil {
		return nil, err
	}
	if err := runsCSV(&per, runs); err != nil {
		return nil, err
	}
	files := map[string][]byte{
		RunSummaryFile: append(js, '\n'),
		RunReportFile:  md.Bytes(),
		RunSummaryCSV:  sum.Bytes(),
		RunsCSV:        per.Bytes(),
		RunResolvedSVG: rep.resolvedSVG(),
		RunSweepSVG:    rep.sweepSVG(),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	return rep, nil
}

// thrString shows a threshold in a report, – for none (native).
func thrString(t benchstat.Num) string {
	if math.IsNaN(float64(t)) {
		return "–"
	}
	return csvNum(t)
}

// csvNum writes a value in full precision, empty for NaN.
func csvNum(x benchstat.Num) string {
	if math.IsNaN(float64(x)) {
		return ""
	}
	return strconv.FormatFloat(float64(x), 'f', -1, 64)
}

func (rep *Report) markdown(w io.Writer) {
	fmt.Fprintf(w, "# rcm bench run\n\n%d runs over %d sessions, up to %d repeats (modes %s; thresholds %s).\n\n",
		rep.Runs, rep.Sessions, rep.Repeats, strings.Join(rep.Modes, ", "), benchstat.JoinFloats(rep.Thresholds))
	fmt.Fprint(w, `Each run drives a real harness through one focus task's schedule, S_base (the task alone) or
S_switch (interleaved with four distractor tasks), and scores the focus checkout's final patch
on a clean checkout: **resolved** when it applies and every FAIL_TO_PASS and PASS_TO_PASS test
passes. **Res_unint** and **Res_switch** are the shares resolved; **Gap** = Res_unint - Res_switch.
Brackets: bootstrap 95% intervals (sessions, then repeats within each, resampled).

`)
	fmt.Fprintf(w, "![resolved by mode](%s)\n\n![threshold sweep](%s)\n\n", RunResolvedSVG, RunSweepSVG)
	fmt.Fprintln(w, "## Resolution")
	fmt.Fprintln(w)
	benchstat.MdHeader(w, "mode", "threshold:", "sessions:", "runs base / switch:", "Res_unint", "Res_switch", "Gap", "lost / gained:")
	for _, a := range rep.Arms {
		fmt.Fprintf(w, "| %s | %s | %d | %d / %d | %s | %s | %s | %d / %d |\n", a.Mode, thrString(a.Threshold), a.Sessions,
			a.BaseRuns, a.SwitchRuns, benchstat.WithCI(a.ResUnint, a.ResUnintCI), benchstat.WithCI(a.ResSwitch, a.ResSwitchCI),
			benchstat.WithCI(a.Gap, a.GapCI), a.Lost, a.Gained)
	}
	fmt.Fprintln(w, "\n## Near and far sessions")
	fmt.Fprintln(w)
	benchstat.MdHeader(w, "mode", "threshold:", "near sessions:", "near Res_unint", "near Res_switch", "near Gap", "far sessions:", "far Res_unint", "far Res_switch", "far Gap")
	for _, a := range rep.Arms {
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %d | %s | %s | %s |\n", a.Mode, thrString(a.Threshold),
			a.Near.Sessions, benchstat.WithCI(a.Near.ResUnint, a.Near.ResUnintCI), benchstat.WithCI(a.Near.ResSwitch, a.Near.ResSwitchCI), benchstat.WithCI(a.Near.Gap, a.Near.GapCI),
			a.Far.Sessions, benchstat.WithCI(a.Far.ResUnint, a.Far.ResUnintCI), benchstat.WithCI(a.Far.ResSwitch, a.Far.ResSwitchCI), benchstat.WithCI(a.Far.Gap, a.Far.GapCI))
	}
	fmt.Fprintln(w, "\n## Cost")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Means per run (base / switch); multipliers are switch over base, and this arm's switch over native's.")
	fmt.Fprintln(w, "Prompt tokens are the upstream's usage (cached included; uncached without them); forwarded tokens the proxy's estimate.")
	fmt.Fprintln(w)
	benchstat.MdHeader(w, "mode", "threshold:", "calls", "calls x:", "forwarded tokens", "forwarded x:", "prompt tokens", "prompt x:", "uncached x:", "calls vs native:", "forwarded vs native:", "prompt vs native:")
	for _, a := range rep.Arms {
		fmt.Fprintf(w, "| %s | %s | %s / %s | %s | %s / %s | %s | %s / %s | %s | %s | %s | %s | %s |\n", a.Mode, thrString(a.Threshold),
			benchstat.Format(a.Calls[0], 1), benchstat.Format(a.Calls[1], 1), benchstat.F2(a.CallsX),
			benchstat.Format(a.Forwarded[0], 0), benchstat.Format(a.Forwarded[1], 0), benchstat.F2(a.ForwardedX),
			benchstat.Format(a.Prompt[0], 0), benchstat.Format(a.Prompt[1], 0), benchstat.F2(a.PromptX), benchstat.F2(a.UncachedX),
			benchstat.F2(a.CallsVsNative), benchstat.F2(a.ForwardedVsNative), benchstat.F2(a.PromptVsNative))
	}
	fmt.Fprintln(w, "\n## Cost with prompt caching")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "The upstream's own counts, means per run (base / switch): cached prompt tokens as reported (OpenAI cached_tokens, Anthropic cache_read_input_tokens), and prompt tokens billed with the cached ones at %g x (uncached + %g x cached).\n\n", replay.DefaultCachePrice, replay.DefaultCachePrice)
	benchstat.MdHeader(w, "mode", "threshold:", "prompt tokens", "cached tokens", "cached share:", "billed tokens", "billed vs native:")
	for _, a := range rep.Arms {
		fmt.Fprintf(w, "| %s | %s | %s / %s | %s / %s | %s / %s | %s / %s | %s |\n", a.Mode, thrString(a.Threshold),
			benchstat.Format(a.Prompt[0], 0), benchstat.Format(a.Prompt[1], 0), benchstat.Format(a.Cached[0], 0), benchstat.Format(a.Cached[1], 0),
			benchstat.F3(benchstat.Num(float64(a.Cached[0])/float64(a.Prompt[0]))), benchstat.F3(benchstat.Num(float64(a.Cached[1])/float64(a.Prompt[1]))),
			benchstat.Format(a.Billed[0], 0), benchstat.Format(a.Billed[1], 0), benchstat.F2(a.BilledVsNative))
	}
	fmt.Fprintln(w, "\n## Completion")
	fmt.Fprintln(w)
	benchstat.MdHeader(w, "mode", "threshold:", "focus requests answered:", "distractor requests answered:", "distractor checkouts changed:")
	for _, a := range rep.Arms {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", a.Mode, thrString(a.Threshold), benchstat.F3(a.Answered), benchstat.F3(a.DistractorAnswered), benchstat.F3(a.DistractorChanged))
	}
	if len(rep.Flips) > 0 {
		fmt.Fprintln(w, "\n## Resolved flips against native")
		fmt.Fprintln(w)
		benchstat.MdHeader(w, "mode", "threshold:", "condition", "pairs:", "lost (native resolved, this did not):", "gained:")
		for _, f := range rep.Flips {
			fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %d |\n", f.Mode, thrString(f.Threshold), f.Condition, f.Pairs, f.Lost, f.Gained)
		}
	}
}

func (rep *Report) summaryCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"mode", "threshold", "sessions", "base_runs", "switch_runs", "res_unint", "res_unint_lo", "res_unint_hi",
		"res_switch", "res_switch_lo", "res_switch_hi", "gap", "gap_lo", "gap_hi", "near_gap", "far_gap",
		"calls_base", "calls_switch", "calls_multiplier", "forwarded_base", "forwarded_switch", "forwarded_multiplier",
		"prompt_base", "prompt_switch", "prompt_multiplier", "uncached_multiplier", "flips_lost", "flips_gained"})
	n := csvNum
	for _, a := range rep.Arms {
		cw.Write([]string{a.Mode, n(a.Threshold), strconv.Itoa(a.Sessions), strconv.Itoa(a.BaseRuns), strconv.Itoa(a.SwitchRuns),
			n(a.ResUnint), n(a.ResUnintCI[0]), n(a.ResUnintCI[1]), n(a.ResSwitch), n(a.ResSwitchCI[0]), n(a.ResSwitchCI[1]),
			n(a.Gap), n(a.GapCI[0]), n(a.GapCI[1]), n(a.Near.Gap), n(a.Far.Gap),
			n(a.Calls[0]), n(a.Calls[1]), n(a.CallsX), n(a.Forwarded[0]), n(a.Forwarded[1]), n(a.ForwardedX),
			n(a.Prompt[0]), n(a.Prompt[1]), n(a.PromptX), n(a.UncachedX), strconv.Itoa(a.Lost), strconv.Itoa(a.Gained)})
	}
	cw.Flush()
	return cw.Error()
}

func runsCSV(w io.Writer, runs []run.Result) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"key", "session", "task", "kind", "condition", "mode", "threshold", "repeat", "resolved", "applied",
		"fail_to_pass_passed", "fail_to_pass_total", "pass_to_pass_passed", "pass_to_pass_total", "requests", "answered",
		"continuations", "timeouts", "calls", "sent_tokens", "forwarded_tokens", "prompt_tokens", "cached_tokens",
		"completion_tokens", "seconds"})
	for _, r := range runs {
		i := strconv.Itoa
		cw.Write([]string{r.Key, r.Session, r.Task, r.Kind, r.Condition, r.Mode, csvNum(r.Threshold), i(r.Repeat),
			strconv.FormatBool(r.Resolved), strconv.FormatBool(r.Applied),
			i(r.FailToPass.Passed), i(r.FailToPass.Total), i(r.PassToPass.Passed), i(r.PassToPass.Total),
			i(r.Requests), i(r.Answered), i(r.Continuations), i(r.Timeouts), i(r.Calls), i(r.SentTokens),
			i(r.ForwardedTokens), i(r.PromptTokens), i(r.CachedTokens), i(r.CompletionTokens),
			strconv.FormatFloat(r.Seconds, 'f', 1, 64)})
	}
	cw.Flush()
	return cw.Error()
}

// resolvedSVG: Res_unint and Res_switch per arm, with their intervals.
func (rep *Report) resolvedSVG() []byte {
	const W, H = 720, 360
	s := plot.New(W, H)
	b := plot.Box{X: 60, Y: 40, W: W - 80, H: H - 110, Top: 1}
	s.Axis(b, "Share resolved by arm: uninterrupted (S_base) and with switches (S_switch)")
	group := b.W / float64(max(len(rep.Arms), 1))
	bw := group / 3
	names := []string{"Res_unint", "Res_switch"}
	for gi, a := range rep.Arms {
		gx := b.X + group*float64(gi) + group/6
		s.Bar(b, gx, bw, a.ResUnint, a.ResUnintCI, plot.MetricColors[0], a.Mode+" "+names[0])
		s.Bar(b, gx+bw, bw, a.ResSwitch, a.ResSwitchCI, plot.MetricColors[1], a.Mode+" "+names[1])
		label := a.Mode
		if !math.IsNaN(float64(a.Threshold)) {
			label += " " + thrString(a.Threshold)
		}
		s.Text(gx+bw, b.Y+b.H+18, "middle", label)
		s.Text(gx+bw, b.Y+b.H+34, "middle", "gap "+benchstat.F3(a.Gap))
	}
	s.Legend(b.X, H-30, 170, names, plot.MetricColors)
	return s.End()
}

// sweepSVG: Res_switch against the threshold, one line per routed mode,
// native as a dashed level.
func (rep *Report) sweepSVG() []byte {
	const W, H = 640, 340
	s := plot.New(W, H)
	b := plot.Box{X: 60, Y: 40, W: W - 100, H: H - 110, Top: 1}
	s.Axis(b, "Res_switch by routing threshold")
	px := s.ThresholdAxis(b, rep.Thresholds)
	for _, m := range rep.Modes {
		var pts []plot.Point
		for _, a := range rep.Arms {
			v := float64(a.ResSwitch)
			if a.Mode != m || math.IsNaN(v) {
				continue
			}
			if math.IsNaN(float64(a.Threshold)) {
				fmt.Fprintf(s, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="6 4"><title>%s: %.3f</title></line>`+"\n",
					b.X, b.Py(v), b.X+b.W, b.Py(v), plot.ModeColors[m], m, v)
				continue
			}
			pts = append(pts, plot.Point{T: float64(a.Threshold), V: v})
		}
		s.Series(b, px, m, pts)
	}
	s.ModeLegend(b.X, H-30, rep.Modes)
	return s.End()
}

// billedPrompt is a run's prompt tokens billed with prompt caching: the
// uncached ones in full, the cached ones at DefaultCachePrice.
func billedPrompt(r *run.Result) (float64, bool) {
	return float64(r.PromptTokens-r.CachedTokens) + replay.DefaultCachePrice*float64(r.CachedTokens), r.UsageCalls > 0
}
