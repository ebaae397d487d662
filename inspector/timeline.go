package inspector

import (
	"bytes"
	"fmt"
	"html"
	"net/http"
	"strconv"

	"github.com/rcm-dev/rcm/memory"
)

// palette colours tasks in order of creation; ui/app.js holds the same
// list (a test keeps the two equal).
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// colours assigns each task its palette colour: the session's tasks in
// order of creation, then tasks only events name (fallback guesses).
type colours map[string]string

func newColours(tasks []memory.Task, events []memory.Event) colours {
	c := colours{}
	add := func(id string) {
		if _, ok := c[id]; id != "" && !ok {
			c[id] = palette[len(c)%len(palette)]
		}
	}
	for _, t := range tasks {
		add(t.ID)
	}
	for _, e := range events {
		add(e.Task)
	}
	return c
}

// Timeline geometry, in SVG user units.
const (
	tlWidth  = 760
	tlLeft   = 44
	tlRight  = 12
	tlBandY  = 22 // the row of calls coloured by task
	tlBandH  = 26
	tlPlotY  = 66 // the confidence plot
	tlPlotH  = 120
	tlHeight = tlPlotY + tlPlotH + 56
)

const maxTimeline = 1000

func (in *Inspector) timeline(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	limit := 300
	if v := r.URL.Query().Get("events"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > maxTimeline {
			in.fail(w, http.StatusBadRequest, "bad_query", fmt.Errorf("events=%q: want a number in 1..%d", v, maxTimeline))
			return
		}
		limit = n
	}
	_, ok, err := in.src.Session(id)
	if err == nil && !ok {
		in.fail(w, http.StatusNotFound, "no_session", fmt.Errorf("no session %q", id))
		return
	}
	var tasks []memory.Task
	var events []memory.Event
	if err == nil {
		tasks, err = in.src.Tasks(id)
	}
	if err == nil {
		events, err = in.src.Events(id, limit)
	}
	if err != nil {
		in.fail(w, http.StatusInternalServerError, "store_error", err)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(Timeline(tasks, events))
}

// Timeline plots a session's calls (oldest first) as SVG: a row of calls
// coloured by task (side calls grey, fallbacks faded), task switches
// marked by dashed lines, and the router's confidence per call against the
// threshold in effect. Every text it draws is escaped.
func Timeline(tasks []memory.Task, events []memory.Event) []byte {
	col := newColours(tasks, events)
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" viewBox="0 0 %d %d" width="%d" height="%d" font-family="sans-serif" font-size="13">`,
		tlWidth, tlHeight, tlWidth, tlHeight)
	b.WriteString("\n")
	fmt.Fprintf(&b, `<text x="%d" y="14" fill="#333">calls by task</text>`+"\n", tlLeft)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#333">confidence</text>`+"\n", tlLeft, tlPlotY-6)
	// Confidence axis: 0, threshold region, 1.
	for _, v := range []float64{0, 0.5, 1} {
		y := confY(v)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end" fill="#666">%g</text>`+"\n",
			tlLeft, tlWidth-tlRight, y, y, tlLeft-4, y+4, v)
	}
	n := len(events)
	if n == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#666">no calls yet</text></svg>`, tlLeft, tlBandY+18)
		return b.Bytes()
	}
	step := float64(tlWidth-tlLeft-tlRight) / float64(n)
	x := func(i int) float64 { return tlLeft + step*float64(i) }
	prevTask := ""
	var conf, thr bytes.Buffer
	for i, e := range events {
		fill, opacity := "#d0d0d0", 1.0
		if c, ok := col[e.Task]; ok && e.Fallback != "side-call" {
			fill = c
		}
		if e.Fallback == "threshold" || e.Fallback == "error" {
			opacity = 0.45
		}
		fmt.Fprintf(&b, `<rect class="call" data-seq="%d" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" fill-opacity="%.2f"><title>%s</title></rect>`+"\n",
			e.Seq, x(i), tlBandY, max(step-1, 0.5), tlBandH, fill, opacity, html.EscapeString(callTitle(i, e)))
		if !decided(e) {
			continue
		}
		if e.Task != "" && prevTask != "" && e.Task != prevTask {
			fmt.Fprintf(&b, `<line class="switch" x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#222" stroke-dasharray="3,2"><title>switch %s → %s</title></line>`+"\n",
				x(i), x(i), tlBandY-4, tlPlotY+tlPlotH, html.EscapeString(prevTask), html.EscapeString(e.Task))
		}
		if e.Task != "" {
			prevTask = e.Task
		}
		cx, cy := x(i)+step/2, confY(e.Confidence)
		fmt.Fprintf(&conf, "%.1f,%.1f ", cx, cy)
		if e.Threshold > 0 {
			fmt.Fprintf(&thr, "%.1f,%.1f %.1f,%.1f ", x(i), confY(e.Threshold), x(i)+step, confY(e.Threshold))
		}
		dot := fmt.Sprintf(`fill="%s"`, col[e.Task])
		if e.Fallback == "threshold" {
			dot = `fill="#fff" stroke="#c00" stroke-width="1.5"`
		}
		fmt.Fprintf(&b, `<circle class="conf" data-seq="%d" cx="%.1f" cy="%.1f" r="3" %s><title>%s</title></circle>`+"\n",
			e.Seq, cx, cy, dot, html.EscapeString(callTitle(i, e)))
	}
	if conf.Len() > 0 {
		fmt.Fprintf(&b, `<polyline class="conf-line" points="%s" fill="none" stroke="#555" stroke-width="1"/>`+"\n", bytes.TrimSpace(conf.Bytes()))
	}
	if thr.Len() > 0 {
		fmt.Fprintf(&b, `<polyline class="threshold" points="%s" fill="none" stroke="#c00" stroke-dasharray="5,3"><title>threshold: below it the call falls back</title></polyline>`+"\n", bytes.TrimSpace(thr.Bytes()))
	}
	// Call numbers along the bottom, about ten of them.
	every := max(1, (n+9)/10)
	for i := 0; i < n; i += every {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#666">%d</text>`+"\n", x(i)+step/2, tlPlotY+tlPlotH+14, i+1)
	}
	// Legend: each task, then the marks.
	lx, ly := float64(tlLeft), float64(tlHeight-12)
	for _, id := range legendOrder(col, tasks, events) {
		fmt.Fprintf(&b, `<rect class="legend" x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f" fill="#333">%s</text>`+"\n",
			lx, ly-9, col[id], lx+14, ly, html.EscapeString(id))
		lx += 24 + 7*float64(len([]rune(id)))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#c00" stroke-dasharray="5,3"/><text x="%.1f" y="%.1f" fill="#333">threshold</text>`+"\n",
		lx, lx+18, ly-4, ly-4, lx+22, ly)
	lx += 90
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#222" stroke-dasharray="3,2"/><text x="%.1f" y="%.1f" fill="#333">switch</text>`+"\n",
		lx+5, lx+5, ly-10, ly, lx+12, ly)
	lx += 70
	fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="#fff" stroke="#c00" stroke-width="1.5"/><text x="%.1f" y="%.1f" fill="#333">fell back</text>`+"\n",
		lx+4, ly-4, lx+12, ly)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func confY(v float64) float64 {
	v = min(max(v, 0), 1)
	return tlPlotY + tlPlotH*(1-v)
}

func callTitle(i int, e memory.Event) string {
	s := fmt.Sprintf("call %d · %s · %s", i+1, e.Kind, e.Mode)
	if e.Task != "" {
		s += " · task " + e.Task
	}
	if decided(e) {
		s += fmt.Sprintf(" · confidence %.2f (%s)", e.Confidence, e.Method)
	}
	if e.Fallback != "none" {
		s += " · fallback " + e.Fallback
	}
	return s
}

func legendOrder(col colours, tasks []memory.Task, events []memory.Event) []string {
	var ids []string
	seen := map[string]bool{}
	for _, t := range tasks {
		if !seen[t.ID] {
			seen[t.ID] = true
			ids = append(ids, t.ID)
		}
	}
	for _, e := range events {
		if _, ok := col[e.Task]; ok && !seen[e.Task] {
			seen[e.Task] = true
			ids = append(ids, e.Task)
		}
	}
	return ids
}

// decided reports whether the router made a decision for the call (native
// and side calls have none).
func decided(e memory.Event) bool { return e.Method != "" }
