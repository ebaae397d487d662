package fit

import (
	"bytes"
	"fmt"
	"go/format"
	"io"
	"math"
	"strings"

	"github.com/rcm-dev/rcm/router"
)

// Summary is what the calls of one replay did, the measures.
type Summary struct {
	Calls, Requests int // all calls; calls at a new request
	// Needed context lost, over calls at a request and over all calls:
	// the share of the calls, and of the routed ones.
	LostRequest, LostRequestRouted, LostAll, LostAllRouted float64
	RoutedRequest, RoutedAll                               float64 // shares routed
	// Split: routed calls of continue requests labelled otherwise than
	// their task's previous request, over those routed calls.
	Split       float64
	SplitRouted int
	// Returns at their request's call: routed right, wrong, fallen back.
	Returns, ReturnsRight, ReturnsWrong, ReturnsFallback int
	// New requests; those whose turn opened a task at some call.
	News, NewsDetected int
	// Unneeded bytes dropped on routed calls; bytes forwarded over sent.
	UnneededDropped, Bytes float64
	// Unneeded is the share of the earlier requests' bytes, over all
	// calls, that the hand labels say the call does not need: what a
	// router right at every call would drop. Top is the session holding
	// the most of them, TopShare its share.
	Unneeded, TopShare float64
	Top                string
	// Calibration of the calls' confidence against Safe.
	Bins []Bin
	ECE  float64
}

// Bin is one band of confidence of the reliability table.
type Bin struct {
	Lo, Hi float64
	Calls  int
	Safe   float64 // share of the calls that were safe
	Mean   float64 // mean confidence
}

func share(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// Summarize measures calls (those of real sessions when real, else the
// synthetic ones).
func Summarize(calls []Call, real bool) Summary {
	var s Summary
	var lostReq, lostReqRouted, routedReq, lostAll, lostAllRouted, routedAll, contRouted, split int
	var unneeded, dropped, sent, fwd, allUnneeded, requested int
	bySession := map[string]int{}
	detected := map[string]bool{}
	news := map[string]bool{}
	edges := []float64{0, 0.5, 0.8, 0.9, 0.95, 1.0001}
	bins := make([]Bin, len(edges)-1)
	for k := range bins {
		bins[k].Lo, bins[k].Hi = edges[k], min(edges[k+1], 1)
	}
	for _, c := range calls {
		if c.Real != real {
			continue
		}
		key := fmt.Sprintf("%s/%d", c.Session, c.Turn)
		s.Calls++
		if c.Routed {
			routedAll++
		}
		if c.Lost {
			lostAll++
			if c.Routed {
				lostAllRouted++
			}
		}
		if c.Routed {
			unneeded += c.Unneeded
			dropped += c.Dropped
		}
		allUnneeded += c.Unneeded
		requested += c.Requested
		bySession[c.Session] += c.Unneeded
		if n := bySession[c.Session]; n > bySession[s.Top] || n == bySession[s.Top] && c.Session < s.Top {
			s.Top = c.Session
		}
		sent += c.Sent
		fwd += c.Forwarded
		if c.Kind == KindNew {
			news[key] = true
			if c.Routed && c.Fresh {
				detected[key] = true
			}
		}
		if c.Routed && c.Kind == KindContinue {
			contRouted++
			if c.Split {
				split++
			}
		}
		for k := range bins {
			if c.Conf >= edges[k] && c.Conf < edges[k+1] {
				bins[k].Calls++
				bins[k].Mean += c.Conf
				if c.Safe {
					bins[k].Safe++
				}
			}
		}
		if !c.First {
			continue
		}
		s.Requests++
		if c.Routed {
			routedReq++
		}
		if c.Lost {
			lostReq++
			if c.Routed {
				lostReqRouted++
			}
		}
		if c.Kind == KindReturn {
			s.Returns++
			switch c.Return {
			case "right":
				s.ReturnsRight++
			case "wrong":
				s.ReturnsWrong++
			default:
				s.ReturnsFallback++
			}
		}
	}
	s.LostRequest, s.LostRequestRouted = share(lostReq, s.Requests), share(lostReqRouted, routedReq)
	s.LostAll, s.LostAllRouted = share(lostAll, s.Calls), share(lostAllRouted, routedAll)
	s.RoutedRequest, s.RoutedAll = share(routedReq, s.Requests), share(routedAll, s.Calls)
	s.Split, s.SplitRouted = share(split, contRouted), contRouted
	s.News, s.NewsDetected = len(news), len(detected)
	s.UnneededDropped, s.Bytes = share(dropped, unneeded), share(fwd, sent)
	s.Unneeded, s.TopShare = share(allUnneeded, requested), share(bySession[s.Top], allUnneeded)
	for k := range bins {
		if n := bins[k].Calls; n > 0 {
			bins[k].Safe /= float64(n)
			bins[k].Mean /= float64(n)
			s.ECE += float64(n) / float64(s.Calls) * math.Abs(bins[k].Safe-bins[k].Mean)
		}
	}
	s.Bins = bins
	return s
}

// Table writes summaries as a markdown table, one row per label.
func Table(w io.Writer, labels []string, ss []Summary) {
	fmt.Fprintln(w, "| | calls at a request (all) | lost at a request: of all / of routed | lost, all calls: of all / of routed | routed at a request (all) | continue split off (routed) | returns right / wrong / fallback | new tasks detected | unneeded bytes dropped | bytes forwarded / sent | ECE |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for i, s := range ss {
		fmt.Fprintf(w, "| %s | %d (%d) | %s / %s | %s / %s | %s (%s) | %s (%d) | %d / %d / %d of %d | %d of %d | %s | %s | %.3f |\n",
			labels[i], s.Requests, s.Calls, pct(s.LostRequest), pct(s.LostRequestRouted), pct(s.LostAll), pct(s.LostAllRouted),
			pct(s.RoutedRequest), pct(s.RoutedAll), pct(s.Split), s.SplitRouted,
			s.ReturnsRight, s.ReturnsWrong, s.ReturnsFallback, s.Returns, s.NewsDetected, s.News,
			pct(s.UnneededDropped), pct(s.Bytes), s.ECE)
	}
}

// Reliability writes a summary's reliability table.
func Reliability(w io.Writer, s Summary) {
	fmt.Fprintln(w, "| confidence | calls | mean confidence | safe |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, b := range s.Bins {
		fmt.Fprintf(w, "| [%.2f, %.2f%s | %d | %.3f | %.3f |\n", b.Lo, b.Hi, map[bool]string{true: "]", false: ")"}[b.Hi >= 1], b.Calls, b.Mean, b.Safe)
	}
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// Generate writes coef as router's generated source.
func Generate(coef *router.Coefficients, command string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by %q; DO NOT EDIT.\n\npackage router\n\n", command)
	b.WriteString("// fitted are the coefficients fitted on the labelled sessions (bench/fit):\n")
	b.WriteString("// real sessions of testdata/real-sessions and the bench's synthetic ones.\n")
	b.WriteString("var fitted = Coefficients{\n")
	for _, h := range []struct {
		name string
		w    *[router.Features]float64
	}{{"Continue", &coef.Continue}, {"Return", &coef.Return}, {"New", &coef.New}} {
		fmt.Fprintf(&b, "\t%s: [Features]float64{\n", h.name)
		for k, v := range h.w {
			fmt.Fprintf(&b, "\t\tf%s: %s,\n", goName(router.FeatureNames[k]), fmt.Sprintf("%.6g", v))
		}
		b.WriteString("\t},\n")
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

// goName is the constant of a feature name ("files_other" is fFilesOther).
func goName(n string) string {
	var b strings.Builder
	for _, p := range strings.Split(n, "_") {
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	return b.String()
}

// Report writes the fit's report: the data, the measures in-sample and
// held out (each session measured by coefficients fitted without its
// repository's fold), and the held-out reliability tables.
func Report(w io.Writer, sessions []*Session, in, held map[float64][]Call, thresholds []float64, o Options) {
	o.defaults()
	kinds := map[bool]map[string]int{true: {}, false: {}}
	groups := map[bool]map[string]bool{true: {}, false: {}}
	n := map[bool]int{}
	for _, s := range sessions {
		n[s.Real]++
		groups[s.Real][s.Group] = true
		for _, g := range s.Gold {
			kinds[s.Real][g.Kind]++
		}
	}
	fmt.Fprintf(w, "# The router's fit\n\nMade by `%s`. The router's scored model is fitted on %d real sessions (%d repositories) and %d synthetic ones (%d repositories); %d folds of whole repositories, %d rounds after the teacher-forced one, L2 penalty %g, synthetic rows %g of the weight.\n\n",
		"go run ./cmd/rcm bench fit", n[true], len(groups[true]), n[false], len(groups[false]), o.Folds, o.Rounds, o.Lambda, o.Synthetic)
	for _, real := range []bool{true, false} {
		name := map[bool]string{true: "Real", false: "Synthetic"}[real]
		k := kinds[real]
		fmt.Fprintf(w, "%s requests: %d new, %d continue, %d return, %d meta.\n\n", name, k[KindNew], k[KindContinue], k[KindReturn], k[KindMeta])
	}
	var labels []string
	var ss []Summary
	for _, real := range []bool{true, false} {
		name := map[bool]string{true: "real", false: "synthetic"}[real]
		for _, thr := range thresholds {
			labels = append(labels, fmt.Sprintf("%s, in-sample, %.2g", name, thr), fmt.Sprintf("%s, held-out, %.2g", name, thr))
			ss = append(ss, Summarize(in[thr], real), Summarize(held[thr], real))
		}
	}
	fmt.Fprintln(w, "## Measures (router mode's forwarded turns)")
	fmt.Fprintln(w)
	Table(w, labels, ss)
	fmt.Fprintln(w)
	for _, real := range []bool{true, false} {
		// The same at every threshold: the hand labels' ceiling.
		u := Summarize(held[router.DefaultThreshold], real)
		if u.Calls == 0 {
			continue
		}
		fmt.Fprintf(w, "The ceiling, %s sessions: of the earlier requests' bytes their calls carry, %s are unneeded by the hand labels (what a router right at every call would drop); session %s holds %s of those.\n",
			map[bool]string{true: "real", false: "synthetic"}[real], pct(u.Unneeded), u.Top, pct(u.TopShare))
	}
	if cs := Ceilings(sessions, true); cs[0].Requests > 0 {
		fmt.Fprintf(w, "A softer split, real sessions, every request in its hand-labelled task: a new task that keeps the turns its parent task had before it opened would drop %s of the unneeded earlier turns' bytes and lose needed context at %s of the %d requests after each session's first; keeping the whole chain of parents, %s and %s.\n",
			pct(cs[0].Dropped), pct(cs[0].Lost), cs[0].Requests, pct(cs[1].Dropped), pct(cs[1].Lost))
	}
	for _, real := range []bool{true, false} {
		fmt.Fprintf(w, "\n## Reliability, held out, threshold %.2g, %s sessions\n\n", router.DefaultThreshold, map[bool]string{true: "real", false: "synthetic"}[real])
		Reliability(w, Summarize(held[router.DefaultThreshold], real))
	}
}
