package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/rcm-dev/rcm/bench/stat"
)

// Files Write puts in its directory.
const (
	ResultsFile = "results.json"
	ReportFile  = "report.md"
	ModesSVG    = "recall_tokens_by_mode.svg"
	SweepSVG    = "threshold_sweep.svg"
)

// Write writes results.json, report.md and its SVG plots into dir,
// creating it.
func (r *Results) Write(dir string) error {
	var md bytes.Buffer
	r.markdown(&md)
	return writeResults(dir, r, md.Bytes(), map[string][]byte{ModesSVG: modesSVG(r), SweepSVG: sweepSVG(r)})
}

// writeResults writes results (as results.json), the report and any other
// files into dir, creating it.
func writeResults(dir string, results any, report []byte, more map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	js, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: results: %w", err)
	}
	files := map[string][]byte{ResultsFile: append(js, '\n'), ReportFile: report}
	for name, b := range more {
		files[name] = b
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

// WriteTable prints the summary table: one row per mode and threshold.
func (r *Results) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tthreshold\tsessions\trecall\trecall base\tcontamination\ttokens ratio\tpost-switch recall\tpost-switch tokens\trouting acc\tECE\tfallback\tfalse switches\tprefix\tcompaction cov\trecord bytes\toverhead p50 ms\tclassifier calls\t")
	for _, s := range r.Summaries {
		fmt.Fprintf(tw, "%s\t%.2f\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", s.Mode, s.Threshold, s.N,
			stat.F3(s.FocusRecall), stat.F3(s.FocusRecallBase), stat.F3(s.Contamination), stat.F3(s.TokensRatio),
			stat.F3(s.PostSwitch.FocusRecall), stat.F3(s.PostSwitch.TokensRatio),
			stat.F3(s.RoutingAccuracy), stat.F3(s.ECE), stat.F3(s.FallbackRate), s.FalseSwitches.String(), stat.F3(s.PrefixStability),
			stat.F3(s.CompactionCoverage), stat.Format(s.RecordBytes.Mean, 0), stat.F2(s.OverheadP50), s.Classifier.Calls)
	}
	tw.Flush()
	fmt.Fprintf(w, "\ncost with prompt caching (input tokens, cached at %g x):\n", r.CachePrice)
	r.writeCostTable(w, false)
}

// markdown writes report.md.
func (r *Results) markdown(w io.Writer) {
	name := r.Spec
	if name == "" {
		name = "(unnamed spec)"
	}
	fmt.Fprintf(w, "# rcm bench replay: %s\n\n", name)
	if r.Layout != "" {
		fmt.Fprintf(w, "Layout: %s.\n\n", r.Layout)
	}
	fmt.Fprintf(w, "%d of %d sessions replayed in every mode and threshold (modes %s; thresholds %s).\n",
		r.Completed, r.Sessions, strings.Join(r.Modes, ", "), stat.JoinFloats(r.Thresholds))
	if r.Interrupted {
		fmt.Fprintf(w, "\n**Interrupted**: these results cover only the sessions that finished.\n")
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, "\n**%d units failed** and their sessions are left out:\n\n", len(r.Errors))
		for _, e := range r.Errors {
			fmt.Fprintf(w, "- `%s`\n", e)
		}
	}
	fmt.Fprint(w, `
Each session is a focus task and four distractors replayed twice through the proxy: S_base
(the focus task alone) and S_switch (the tasks interleaved). Values are means over sessions
with their 95% Student-t interval over sessions in brackets. Per call:

- **recall**: share of the focus task's requests so far found verbatim in the forwarded
  messages (decoded JSON), on the focus calls of S_switch; *recall base*: the same on S_base.
- **contamination**: share of forwarded message bytes (tokens ~ bytes/4) attributed to other
  tasks: a message equal to one of the harness's history takes that message's task, any other
  (state records, summaries) the task whose requests or checkout path it quotes.
- **tokens ratio**: forwarded tokens over what the harness sent (= native's forwarded tokens);
  *vs base*: forwarded tokens over those of the same call in S_base.
- **post-switch**: the same recall, contamination and tokens ratio over the focus calls of
  S_switch that come after another task's turn (A_2 .. A_submit): there the other tasks' turns
  are in the history, so that is where routing matters; A_1's calls have nothing to drop.
- **routing acc**: over all S_switch calls; the proxy's task ids (X-RCM-Task) are mapped to
  true tasks one-to-one by decreasing co-occurrence in the session; calls without a decision
  count as wrong. *ECE*: expected calibration error of X-RCM-Confidence over 10 bins.
- **fallback**: share of S_switch calls answered with X-RCM-Fallback threshold or error.
- **false switches**: on S_base (the focus task alone), routed calls whose X-RCM-Task differs
  from the first routed call's, over the routed S_base calls (pooled over sessions).
- **classifier** (--router-model): calls of the router's model classifier, their tokens
  (prompt + completion) and time per call, over both schedules (X-RCM-Router-Calls). The
  scripted upstream answers it with an abstention (t1 at confidence 0): those calls stay
  fallbacks, but labelled t1, which moves routing acc and ECE of those rows.
- **prefix**: longest common prefix of consecutive forwarded messages arrays over the later
  one's length (what a provider's prompt cache can reuse), S_switch.
- **overhead**: round trip through the proxy minus a direct round trip to the upstream with
  the forwarded body, per call (pooled; machine load from concurrent units included).
- **compaction coverage**: each S_switch replay ends with the harness's compaction call,
  built as OpenCode 1.18.33 builds it (the conversation inside <conversation>, less the recent
  tail it keeps verbatim); the share of the session's unfinished tasks (those whose submit
  stage was not sent: the four distractors) whose every request is verbatim in the call as
  the upstream received it. *sections*: share of sessions whose call asks for one
  "## Task <id>" section per task. Native forwards the harness's own prompt.
- **record bytes** (rcm): size of the focus task's rendered state record (proxy inspector,
  unbounded; the injected message is cut at --memory-tokens) after each focus turn of
  S_switch: mean, largest, and growth per focus turn (least-squares slope).

`)
	fmt.Fprintf(w, "![recall and tokens by mode](%s)\n\n![threshold sweep](%s)\n\n", ModesSVG, SweepSVG)
	fmt.Fprintln(w, "## All sessions")
	fmt.Fprintln(w)
	stat.MdHeader(w, "mode", "threshold:", "n:", "recall", "recall base:", "contamination", "tokens ratio", "vs base:", "tokens/call:", "routing acc", "routed:", "ECE:", "fallback (thr / err)", "false switches", "prefix", "overhead p50 / p95 ms")
	for _, s := range r.Summaries {
		fmt.Fprintf(w, "| %s | %.2f | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s (%s / %s) | %s | %s | %s / %s |\n",
			s.Mode, s.Threshold, s.N, stat.WithCI(s.FocusRecall, s.FocusRecallCI), stat.F3(s.FocusRecallBase),
			stat.WithCI(s.Contamination, s.ContaminationCI), stat.WithCI(s.TokensRatio, s.TokensRatioCI), stat.F3(s.TokensVsBase),
			stat.Format(s.ForwardedTokens, 0), stat.WithCI(s.RoutingAccuracy, s.RoutingAccuracyCI), stat.F3(s.Routed), stat.F3(s.ECE),
			stat.F3(s.FallbackRate), stat.F3(s.FallbackThreshold), stat.F3(s.FallbackError), s.FalseSwitches.String(),
			stat.WithCI(s.PrefixStability, s.PrefixStabilityCI), stat.F2(s.OverheadP50), stat.F2(s.OverheadP95))
	}
	fmt.Fprintln(w, "\n## Router model classifier")
	fmt.Fprintln(w)
	stat.MdHeader(w, "mode", "threshold:", "calls:", "errors:", "prompt tokens:", "completion tokens:", "ms:", "ms per call:")
	for _, s := range r.Summaries {
		c := s.Classifier
		fmt.Fprintf(w, "| %s | %.2f | %d | %d | %d | %d | %s | %s |\n", s.Mode, s.Threshold, c.Calls, c.Errors,
			c.PromptTokens, c.CompletionTokens, stat.F2(c.Ms), stat.F2(c.MsPerCall))
	}
	fmt.Fprintln(w, "\n## Post-switch focus calls")
	fmt.Fprintln(w)
	stat.MdHeader(w, "mode", "threshold:", "n:", "recall", "contamination", "tokens ratio", "vs base:")
	for _, s := range r.Summaries {
		p := s.PostSwitch
		fmt.Fprintf(w, "| %s | %.2f | %d | %s | %s | %s | %s |\n", s.Mode, s.Threshold, p.N,
			stat.WithCI(p.FocusRecall, p.FocusRecallCI), stat.WithCI(p.Contamination, p.ContaminationCI),
			stat.WithCI(p.TokensRatio, p.TokensRatioCI), stat.F3(p.TokensVsBase))
	}
	fmt.Fprintln(w, "\n## Compaction and state records")
	fmt.Fprintln(w)
	stat.MdHeader(w, "mode", "threshold:", "n:", "compaction coverage", "sections:", "record bytes mean:", "max:", "per focus turn:", "by focus turn")
	for _, s := range r.Summaries {
		rb := s.RecordBytes
		turns := make([]string, len(rb.ByTurn))
		for i, b := range rb.ByTurn {
			turns[i] = stat.Format(b, 0)
		}
		by := strings.Join(turns, " → ")
		if by == "" {
			by = "–"
		}
		fmt.Fprintf(w, "| %s | %.2f | %d | %s | %s | %s | %s | %s | %s |\n", s.Mode, s.Threshold, s.N,
			stat.WithCI(s.CompactionCoverage, s.CompactionCoverageCI), stat.F3(s.CompactionSections),
			stat.Format(rb.Mean, 0), stat.Format(rb.Max, 0), stat.Format(rb.PerTurn, 0), by)
	}
	fmt.Fprintln(w, "\n## Cost with prompt caching")
	fmt.Fprintf(w, `
Input tokens of every call of each schedule (S_switch: every task's calls), summed over the
sessions. A call's context is its body with the messages array last (providers put tools and
system first); the part of it that repeats a prefix of a context the session sent earlier is
cached and bills at %g x an uncached token. *billed*: uncached + %g x cached tokens; *vs
native*: billed over native's billed on the same sessions; *cached*: cached share of the input.

`, r.CachePrice, r.CachePrice)
	r.writeCostTable(w, true)
	fmt.Fprintln(w, "\n## Near and far sessions")
	fmt.Fprintln(w)
	stat.MdHeader(w, "mode", "threshold:", "near n:", "near recall", "near contamination", "near tokens ratio", "far n:", "far recall", "far contamination", "far tokens ratio")
	for _, s := range r.Summaries {
		fmt.Fprintf(w, "| %s | %.2f | %d | %s | %s | %s | %d | %s | %s | %s |\n", s.Mode, s.Threshold,
			s.Near.N, stat.WithCI(s.Near.FocusRecall, s.Near.FocusRecallCI), stat.WithCI(s.Near.Contamination, s.Near.ContaminationCI),
			stat.WithCI(s.Near.TokensRatio, s.Near.TokensRatioCI),
			s.Far.N, stat.WithCI(s.Far.FocusRecall, s.Far.FocusRecallCI), stat.WithCI(s.Far.Contamination, s.Far.ContaminationCI),
			stat.WithCI(s.Far.TokensRatio, s.Far.TokensRatioCI))
	}
	fmt.Fprintln(w, "\n## Calibration")
	fmt.Fprintln(w)
	any := false
	for _, s := range r.Summaries {
		if len(s.Calibration) == 0 {
			continue
		}
		any = true
		fmt.Fprintf(w, "%s at threshold %.2f (ECE %s; routed decisions right: %s of %d):\n\n", s.Mode, s.Threshold, stat.F3(s.ECE), stat.F3(s.RoutedRight), s.RoutedN)
		stat.MdHeader(w, "confidence bin", "calls:", "mean confidence:", "accuracy:")
		for _, b := range s.Calibration {
			fmt.Fprintf(w, "| %.1f–%.1f | %d | %.3f | %.3f |\n", b.Lo, b.Hi, b.N, b.Confidence, b.Accuracy)
		}
		fmt.Fprintln(w)
	}
	if !any {
		fmt.Fprintln(w, "No routing decisions were made (no X-RCM-Task on any call).")
	}
}
