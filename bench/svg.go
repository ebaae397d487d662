package bench

import (
	"bytes"
	"fmt"
	"html"
	"math"
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
	type bar struct {
		v  Num
		ci [2]Num
	}
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
		bars := []bar{{row.FocusRecall, row.FocusRecallCI}, {row.TokensRatio, row.TokensRatioCI}, {row.Contamination, row.ContaminationCI}}
		gx := b.x + group*float64(gi) + group/8
		for i, br := range bars {
			x := gx + bw*float64(i)
			v := float64(br.v)
			if math.IsNaN(v) {
				continue
			}
			fmt.Fprintf(s, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.3f</title></rect>`+"\n",
				x, b.py(v), bw*0.9, b.py(0)-b.py(v), metricColors[i], row.Mode, names[i], v)
			if lo, hi := float64(br.ci[0]), float64(br.ci[1]); !math.IsNaN(lo) && hi > lo {
				cx := x + bw*0.45
				s.line(cx, b.py(lo), cx, b.py(hi), "black", 1)
				s.line(cx-4, b.py(lo), cx+4, b.py(lo), "black", 1)
				s.line(cx-4, b.py(hi), cx+4, b.py(hi), "black", 1)
			}
		}
		s.text(gx+bw*1.5, b.y+b.h+18, "middle", row.Mode)
	}
	for i, n := range names {
		x := b.x + float64(i)*170
		fmt.Fprintf(s, `<rect x="%.1f" y="%d" width="12" height="12" fill="%s"/>`+"\n", x, H-36, metricColors[i])
		s.text(x+16, float64(H-26), "start", n)
	}
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
	lo, hi := 0.0, 1.0
	if len(r.Thresholds) > 0 {
		lo, hi = r.Thresholds[0], r.Thresholds[0]
		for _, t := range r.Thresholds {
			lo, hi = math.Min(lo, t), math.Max(hi, t)
		}
	}
	if hi == lo {
		lo, hi = lo-0.05, hi+0.05
	}
	for pi, p := range panels {
		var vals []float64
		for _, row := range r.Summaries {
			vals = append(vals, float64(p.get(row)))
		}
		b := box{x: float64(pi*PW) + 50, y: 40, w: PW - 70, h: H - 110, top: top(vals...)}
		px := func(t float64) float64 { return b.x + (t-lo)/(hi-lo)*b.w }
		s.axis(b, p.name)
		for _, t := range r.Thresholds {
			s.text(px(t), b.y+b.h+16, "middle", fmt.Sprintf("%g", t))
		}
		s.text(b.x+b.w/2, b.y+b.h+32, "middle", "threshold")
		for _, m := range r.Modes {
			var pts bytes.Buffer
			for _, row := range r.Summaries {
				if v := float64(p.get(row)); row.Mode == m && !math.IsNaN(v) {
					fmt.Fprintf(&pts, "%.1f,%.1f ", px(row.Threshold), b.py(v))
					fmt.Fprintf(s, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s %g: %.3f</title></circle>`+"\n",
						px(row.Threshold), b.py(v), modeColors[m], m, row.Threshold, v)
				}
			}
			if pts.Len() > 0 {
				fmt.Fprintf(s, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", bytes.TrimSpace(pts.Bytes()), modeColors[m])
			}
		}
	}
	for i, m := range r.Modes {
		x := 50 + float64(i)*120
		fmt.Fprintf(s, `<rect x="%.1f" y="%d" width="12" height="12" fill="%s"/>`+"\n", x, H-30, modeColors[m])
		s.text(x+16, float64(H-20), "start", m)
	}
	return s.bytes()
}
