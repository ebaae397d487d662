package plot

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"slices"

	"github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/bench/stat"
)

// Plots are hand-written SVG: no dependency, and a browser opens them.

var (
	MetricColors = []string{"#1f77b4", "#ff7f0e", "#7f7f7f"}
	ModeColors   = map[string]string{spec.ModeNative: "#7f7f7f", spec.ModeRouter: "#ff7f0e", spec.ModeRCM: "#1f77b4"}
)

type svg struct{ bytes.Buffer }

func New(w, h int) *svg {
	s := &svg{}
	fmt.Fprintf(s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(s, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	return s
}

func (s *svg) Text(x, y float64, anchor, txt string, extra ...string) {
	attrs := ""
	for _, e := range extra {
		attrs += " " + e
	}
	fmt.Fprintf(s, `<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>`+"\n", x, y, anchor, attrs, html.EscapeString(txt))
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, width float64) {
	fmt.Fprintf(s, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"/>`+"\n", x1, y1, x2, y2, stroke, width)
}

// End closes the document and returns it.
func (s *svg) End() []byte {
	s.WriteString("</svg>\n")
	return s.Buffer.Bytes()
}

// axis draws a y axis from 0 to top over the plot box with gridlines.
type Box struct{ X, Y, W, H, Top float64 }

func (b Box) Py(v float64) float64 { return b.Y + b.H - v/b.Top*b.H }

func (s *svg) Axis(b Box, label string) {
	for i := 0; i <= 4; i++ {
		v := b.Top * float64(i) / 4
		y := b.Py(v)
		s.line(b.X, y, b.X+b.W, y, "#e0e0e0", 1)
		s.Text(b.X-4, y+4, "end", fmt.Sprintf("%.2g", v))
	}
	s.line(b.X, b.Y, b.X, b.Y+b.H, "black", 1)
	s.line(b.X, b.Y+b.H, b.X+b.W, b.Y+b.H, "black", 1)
	s.Text(b.X+b.W/2, b.Y-8, "middle", label, `font-weight="bold"`)
}

// top rounds a maximum up to a tidy axis end, at least 1.
func Top(vals ...float64) float64 {
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
func (s *svg) Bar(b Box, x, bw float64, v stat.Num, ci [2]stat.Num, color, title string) {
	f := float64(v)
	if math.IsNaN(f) {
		return
	}
	fmt.Fprintf(s, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %.3f</title></rect>`+"\n",
		x, b.Py(f), bw*0.9, b.Py(0)-b.Py(f), color, html.EscapeString(title), f)
	if lo, hi := float64(ci[0]), float64(ci[1]); !math.IsNaN(lo) && hi > lo {
		cx := x + bw*0.45
		s.line(cx, b.Py(lo), cx, b.Py(hi), "black", 1)
		s.line(cx-4, b.Py(lo), cx+4, b.Py(lo), "black", 1)
		s.line(cx-4, b.Py(hi), cx+4, b.Py(hi), "black", 1)
	}
}

// legend draws a colour key from (x, y), one entry every step.
func (s *svg) Legend(x, y, step float64, names, colors []string) {
	for i, n := range names {
		fmt.Fprintf(s, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`+"\n", x+float64(i)*step, y, colors[i])
		s.Text(x+float64(i)*step+16, y+10, "start", n)
	}
}

// modeLegend is the legend of one line per mode.
func (s *svg) ModeLegend(x, y float64, modes []string) {
	colors := make([]string, len(modes))
	for i, m := range modes {
		colors[i] = ModeColors[m]
	}
	s.Legend(x, y, 120, modes, colors)
}

// thresholdAxis labels the x axis of a threshold sweep under the plot box
// and returns the x of a threshold.
func (s *svg) ThresholdAxis(b Box, thresholds []float64) func(float64) float64 {
	lo, hi := 0.0, 1.0
	if len(thresholds) > 0 {
		lo, hi = slices.Min(thresholds), slices.Max(thresholds)
	}
	if hi == lo {
		lo, hi = lo-0.05, hi+0.05
	}
	px := func(t float64) float64 { return b.X + (t-lo)/(hi-lo)*b.W }
	for _, t := range thresholds {
		s.Text(px(t), b.Y+b.H+16, "middle", fmt.Sprintf("%g", t))
	}
	s.Text(b.X+b.W/2, b.Y+b.H+32, "middle", "threshold")
	return px
}

// point is a value at a threshold.
type Point struct{ T, V float64 }

// series draws one mode's line through its points (NaN values left out),
// each point with a tooltip.
func (s *svg) Series(b Box, px func(float64) float64, mode string, pts []Point) {
	var line bytes.Buffer
	for _, p := range pts {
		if math.IsNaN(p.V) {
			continue
		}
		fmt.Fprintf(&line, "%.1f,%.1f ", px(p.T), b.Py(p.V))
		fmt.Fprintf(s, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s %g: %.3f</title></circle>`+"\n",
			px(p.T), b.Py(p.V), ModeColors[mode], mode, p.T, p.V)
	}
	if line.Len() > 0 {
		fmt.Fprintf(s, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", bytes.TrimSpace(line.Bytes()), ModeColors[mode])
	}
}
