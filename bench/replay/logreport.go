package replay

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/rcm-dev/rcm/bench/stat"
)

// Write writes results.json and report.md (the metrics table, then the
// audit listing) into dir, creating it.
func (r *LogResults) Write(dir string) error {
	var md bytes.Buffer
	r.markdown(&md)
	return writeResults(dir, r, md.Bytes(), nil)
}

// logColumns are the metrics table's columns after mode and threshold.
var logColumns = []string{"scope", "calls:", "routed:", "needed lost:", "needed lost (routed):", "continue split off:",
	"returns right/wrong/fallback:", "new detected:", "unneeded dropped:", "fallback:", "bytes fwd/sent:", "ECE:"}

// logRows returns a summary's two rows: at a new request, all calls.
func logRows(s LogSummary) [][]string {
	var out [][]string
	for _, sc := range []struct {
		name string
		m    LogMetrics
	}{{"at request", s.AtRequest}, {"all calls", s.All}} {
		m := sc.m
		out = append(out, []string{s.Mode, strconv.FormatFloat(s.Threshold, 'f', 2, 64), sc.name,
			strconv.Itoa(m.Calls), strconv.Itoa(m.Routed), stat.F3(m.NeededLost), stat.F3(m.NeededLostRouted),
			fmt.Sprintf("%s (%d)", stat.F3(m.SplitOff), m.ContinueRouted),
			fmt.Sprintf("%d/%d/%d", m.ReturnsRight, m.ReturnsWrong, m.ReturnsFallback),
			fmt.Sprintf("%d/%d", m.NewDetected, m.NewTasks),
			stat.F3(m.UnneededDropped), stat.F3(m.FallbackRate), stat.F3(m.BytesRatio), stat.F3(s.ECE)})
	}
	return out
}

// WriteTable prints the metrics table, one pair of rows per mode and
// threshold, or says there are no labels to measure against.
func (r *LogResults) WriteTable(w io.Writer) {
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "%d logs or parts of logs left out or repaired when the logs were read (%s lists them)\n", len(r.Skipped), ReportFile)
	}
	if len(r.Summaries) == 0 {
		fmt.Fprintf(w, "%d sessions replayed, none labelled: %s lists each request's decision\n", r.Sessions, ReportFile)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	names := []string{"mode", "threshold"}
	for _, c := range logColumns {
		names = append(names, strings.TrimSuffix(c, ":"))
	}
	fmt.Fprintln(tw, strings.Join(names, "\t")+"\t")
	for _, s := range r.Summaries {
		for _, row := range logRows(s) {
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
	}
	tw.Flush()
}

// WriteMetrics writes the labelled sessions' metrics as a markdown table,
// a row per mode, threshold and scope.
func (r *LogResults) WriteMetrics(w io.Writer) {
	stat.MdHeader(w, append([]string{"mode", "threshold:"}, logColumns...)...)
	for _, s := range r.Summaries {
		for _, row := range logRows(s) {
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
	}
}

// markdown writes report.md.
func (r *LogResults) markdown(w io.Writer) {
	fmt.Fprintf(w, "# rcm bench replay: real sessions\n\n%d sessions (%d labelled, %d completed), API %s.\n\n", r.Sessions, r.Labelled, r.Completed, r.API)
	if len(r.Summaries) > 0 {
		fmt.Fprintln(w, "## Metrics (labelled sessions)")
		fmt.Fprintln(w)
		r.WriteMetrics(w)
		fmt.Fprintln(w)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "Error: %s\n\n", e)
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "## Left out or repaired when the logs were read\n\n")
		for _, sk := range r.Skipped {
			fmt.Fprintf(w, "- `%s`, %s: %s\n", sk.Source, sk.Record, sk.Reason)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "## Audit: each request's decision at its first call and over all its calls, and the earlier requests they left out")
	for _, a := range r.Audit {
		fmt.Fprintf(w, "\n### %s, %s, threshold %.2f\n\n`%s`\n\n", a.Session, a.Mode, a.Threshold, a.Path)
		stat.MdHeader(w, "turn:", "request", "gold", "task", "confidence:", "method", "fallback", "dropped", "needed lost", "calls:", "last call", "dropped by any call", "needed lost by any")
		for _, row := range a.Requests {
			last := ""
			if row.Calls > 1 {
				last = fmt.Sprintf("%s %.3f %s", row.Last.Task, row.Last.Confidence, row.Last.Fallback)
			}
			fmt.Fprintf(w, "| %d | %s | %s | %s | %.3f | %s | %s | %s | %s | %d | %s | %s | %s |\n", row.Turn, mdCell(row.Request), row.Gold, row.Task,
				row.Confidence, row.Method, row.Fallback, turnList(row.Dropped), yes(row.NeededLost), row.Calls, last, turnList(row.DroppedAny), yes(row.LostAny))
		}
	}
}

// turnList writes turn numbers as "#1 #3".
func turnList(ts []int) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = "#" + strconv.Itoa(t)
	}
	return strings.Join(out, " ")
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return ""
}

// mdCell makes text fit one table cell: one line, no column breaks.
func mdCell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
