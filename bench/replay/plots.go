package replay

import (
	"fmt"
	"math"

	"github.com/rcm-dev/rcm/bench/plot"
	"github.com/rcm-dev/rcm/bench/stat"
)

// defaultRow picks, for each mode, the summary at the threshold nearest the
// proxy's default (0.8).
func defaultRow(r *Results, mode string) (Summary, bool) {
	best, ok := Summary{}, false
	for _, s := range r.Summaries {
		if s.Mode == mode && (!ok || math.Abs(s.Threshold-0.8) < math.Abs(best.Threshold-0.8)) {
			best, ok = s, true
		}
	}
	return best, ok
}

// modesSVG: recall, tokens ratio and contamination per mode (bars with
// their 95% intervals) at the threshold nearest 0.8.
func modesSVG(r *Results) []byte {
	names := []string{"focus recall", "tokens ratio", "contamination"}
	var rows []Summary
	var all []float64
	for _, m := range r.Modes {
		if s, ok := defaultRow(r, m); ok {
			rows = append(rows, s)
			all = append(all, float64(s.FocusRecallCI[1]), float64(s.TokensRatioCI[1]), float64(s.ContaminationCI[1]))
		}
	}
	const W, H = 640, 360
	s := plot.New(W, H)
	b := plot.Box{X: 60, Y: 40, W: W - 80, H: H - 110, Top: plot.Top(all...)}
	thr := ""
	if len(rows) > 0 {
		thr = fmt.Sprintf(" (threshold %.2f)", rows[len(rows)-1].Threshold)
	}
	s.Axis(b, "Focus calls of S_switch by mode"+thr)
	group := b.W / float64(max(len(rows), 1))
	bw := group / 4
	for gi, row := range rows {
		bars := []struct {
			v  stat.Num
			ci [2]stat.Num
		}{{row.FocusRecall, row.FocusRecallCI}, {row.TokensRatio, row.TokensRatioCI}, {row.Contamination, row.ContaminationCI}}
		gx := b.X + group*float64(gi) + group/8
		for i, br := range bars {
			s.Bar(b, gx+bw*float64(i), bw, br.v, br.ci, plot.MetricColors[i], row.Mode+" "+names[i])
		}
		s.Text(gx+bw*1.5, b.Y+b.H+18, "middle", row.Mode)
	}
	s.Legend(b.X, H-36, 170, names, plot.MetricColors)
	return s.End()
}

// sweepSVG: recall, tokens ratio and fallback rate against the threshold,
// one line per mode.
func sweepSVG(r *Results) []byte {
	panels := []struct {
		name string
		get  func(Summary) stat.Num
	}{
		{"focus recall", func(s Summary) stat.Num { return s.FocusRecall }},
		{"tokens ratio", func(s Summary) stat.Num { return s.TokensRatio }},
		{"fallback rate", func(s Summary) stat.Num { return s.FallbackRate }},
	}
	const W, H, PW = 900, 320, 300
	s := plot.New(W, H)
	for pi, p := range panels {
		var vals []float64
		for _, row := range r.Summaries {
			vals = append(vals, float64(p.get(row)))
		}
		b := plot.Box{X: float64(pi*PW) + 50, Y: 40, W: PW - 70, H: H - 110, Top: plot.Top(vals...)}
		s.Axis(b, p.name)
		px := s.ThresholdAxis(b, r.Thresholds)
		for _, m := range r.Modes {
			var pts []plot.Point
			for _, row := range r.Summaries {
				if row.Mode == m {
					pts = append(pts, plot.Point{T: row.Threshold, V: float64(p.get(row))})
				}
			}
			s.Series(b, px, m, pts)
		}
	}
	s.ModeLegend(50, H-30, r.Modes)
	return s.End()
}
