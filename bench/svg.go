package bench

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"slices"
)

// Plots are hand-written SVG: no dependency, and a browser opens them.

var (
	metricColors = []string{"#1f77b4", "#ff7f0e", "#7f7f7f"}
	modeColors   = map[string]string{ModeNative: "#7f7f7f", ModeRouter: "#ff7f0e", ModeRCM: "#1f77b4"}
)

type svg struct{ bytes.Buffer }

func newSVG(w, h int) *svg {
	s := &svg{}
	fmt.Fprintf(s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(s, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	return s
}

func (s *svg) text(x, y float64, anchor, txt string, extra ...string) {
	attrs := ""
	for _, e := range extra {
		attrs += " " + e
	}
	fmt.Fprintf(s, `<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>`+"\n", x, y, anchor, attrs, html.EscapeString(txt))
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, width float64) {
	fmt.Fprintf(s, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"/>`+"\n", x1, y1, x2, y2, stroke, width)
}

func (s *svg) bytes() []byte {
	s.WriteString("</svg>\n")
	return s.Bytes()
}

// axis draws a y axis from 0 to top over the plot box with gridlines.
type box struct{ x, y, w, h, top float64 }

func (b box) py(v float64) float64 { return b.y + b.h - v/b.top*b.h }

func (s *svg) axis(b box, label string) {
	for i := 0; i <= 4; i++ {
		v := b.top * float64(i) / 4
		y := b.py(v)
		s.line(b.x, y, b.x+b.w, y, "#e0e0e0", 1)
		s.text(b.x-4, y+4, "end", fmt.Sprintf("%.2g", v))
	}
	s.line(b.x, b.y, b.x, b.y+b.h, "black", 1)
	s.line(b.x, b.y+b.h, b.x+b.w, b.y+b.h, "black", 1)
	s.text(b.x+b.w/2, b.y-8, "middle", label, `font-weight="bold"`)
}

// top rounds a maximum up to a tidy axis end, at least 1.
func top(vals ...float64) float64 {
	m := 1.0
	for _, v := range vals {
		if !math.IsNaN(v) && v > m {
			m = v
		}
	}
	return math.Ceil(m*4) / 4
}

// bar draws one bar of value v at x, bw wide, with its 95% interval as a
// whisker when it has one; title is its tooltip. NaN draws nothing.
func (s *svg) bar(b box, x, bw float64, v Num, ci [2]Num, color, title string) {
	f := float64(v)
	if math.IsNaN(f) {
		return
	}
	fmt.Fprintf(s, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %.3f</title></rect>`+"\n",
		x, b.py(f), bw*0.9, b.py(0)-b.py(f), color, html.EscapeString(title), f)
	if lo, hi := float64(ci[0]), float64(ci[1]); !math.IsNaN(lo) && hi > lo {
		cx := x + bw*0.45
		s.line(cx, b.py(lo), cx, b.py(hi), "black", 1)
		s.line(cx-4, b.py(lo), cx+4, b.py(lo), "black", 1)
		s.line(cx-4, b.py(hi), cx+4, b.py(hi), "black", 1)
	}
}

// legend draws a colour key from (x, y), one entry every step.
func (s *svg) legend(x, y, step float64, names, colors []string) {
	for i, n := range names {
		fmt.Fprintf(s, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`+"\n", x+float64(i)*step, y, colors[i])
		s.text(x+float64(i)*step+16, y+10, "start", n)
	}
}

// modeLegend is the legend of one line per mode.
func (s *svg) modeLegend(x, y float64, modes []string) {
	colors := make([]string, len(modes))
	for i, m := range modes {
		colors[i] = modeColors[m]
	}
	s.legend(x, y, 120, modes, colors)
}

// thresholdAxis labels the x axis of a threshold sweep under the plot box
// and returns the x of a threshold.
func (s *svg) thresholdAxis(b box, thresholds []float64) func(float64) float64 {
	lo, hi := 0.0, 1.0
	if len(thresholds) > 0 {
		lo, hi = slices.Min(thresholds), slices.Max(thresholds)
	}
	if hi == lo {
		lo, hi = lo-0.05, hi+0.05
	}
	px := func(t float64) float64 { return b.x + (t-lo)/(hi-lo)*b.w }
	for _, t := range thresholds {
		s.text(px(t), b.y+b.h+16, "middle", fmt.Sprintf("%g", t))
	}
	s.text(b.x+b.w/2, b.y+b.h+32, "middle", "threshold")
	return px
}

// point is a value at a threshold.
type point struct{ t, v float64 }

// series draws one mode's line through its points (NaN values left out),
// each point with a tooltip.
func (s *svg) series(b box, px func(float64) float64, mode string, pts []point) {
	var line bytes.Buffer
	for _, p := range pts {
		if math.IsNaN(p.v) {
			continue
		}
		fmt.Fprintf(&line, "%.1f,%.1f ", px(p.t), b.py(p.v))
		fmt.Fprintf(s, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s %g: %.3f</title></circle>`+"\n",
			px(p.t), b.py(p.v), modeColors[mode], mode, p.t, p.v)
	}
	if line.Len() > 0 {
		fmt.Fprintf(s, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", bytes.TrimSpace(line.Bytes()), modeColors[mode])
	}
}

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
	s := newSVG(W, H)
	b := box{x: 60, y: 40, w: W - 80, h: H - 110, top: top(all...)}
	thr := ""
	if len(rows) > 0 {
		thr = fmt.Sprintf(" (threshold %.2f)", rows[len(rows)-1].Threshold)
	}
	s.axis(b, "Focus calls of S_switch by mode"+thr)
	group := b.w / float64(max(len(rows), 1))
	bw := group / 4
	for gi, row := range rows {
		bars := []struct {
			v  Num
			ci [2]Num
		}{{row.FocusRecall, row.FocusRecallCI}, {row.TokensRatio, row.TokensRatioCI}, {row.Contamination, row.ContaminationCI}}
		gx := b.x + group*float64(gi) + group/8
		for i, br := range bars {
			s.bar(b, gx+bw*float64(i), bw, br.v, br.ci, metricColors[i], row.Mode+" "+names[i])
		}
		s.text(gx+bw*1.5, b.y+b.h+18, "middle", row.Mode)
	}
	s.legend(b.x, H-36, 170, names, metricColors)
	return s.bytes()
}

// sweepSVG: recall, tokens ratio and fallback rate against the threshold,
// one line per mode.
func sweepSVG(r *Results) []byte {
	panels := []struct {
		name string
		get  func(Summary) Num
	}{
		{"focus recall", func(s Summary) Num { return s.FocusRecall }},
		{"tokens ratio", func(s Summary) Num { return s.TokensRatio }},
		{"fallback rate", func(s Summary) Num { return s.FallbackRate }},
	}
	const W, H, PW = 900, 320, 300
	s := newSVG(W, H)
	for pi, p := range panels {
		var vals []float64
		for _, row := range r.Summaries {
			vals = append(vals, float64(p.get(row)))
		}
		b := box{x: float64(pi*PW) + 50, y: 40, w: PW - 70, h: H - 110, top: top(vals...)}
		s.axis(b, p.name)
		px := s.thresholdAxis(b, r.Thresholds)
		for _, m := range r.Modes {
			var pts []point
			for _, row := range r.Summaries {
				if row.Mode == m {
					pts = append(pts, point{row.Threshold, float64(p.get(row))})
				}
			}
			s.series(b, px, m, pts)
		}
	}
	s.modeLegend(50, H-30, r.Modes)
	return s.bytes()
}
