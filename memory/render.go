package memory

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Render writes r as the compact text of the memory message (see Message). Sections come in order of importance: requirements
// (verbatim, oldest first), unfinished items, the last test, files changed,
// progress, summary, commands, files read. When maxTokens > 0 the text
// stays within maxTokens*4 bytes (tokens estimated as bytes/4): the last
// section that fits only partly is cut with a note saying how much, and the
// sections after it are left out. The same record always renders the same.
func Render(r Record, maxTokens int) string {
	w := &renderer{limit: -1}
	if maxTokens > 0 {
		w.limit = maxTokens * 4
	}
	if !w.line("Task " + r.Task + " state (rcm memory)") {
		return ""
	}
	if r.Workspace != "" && !w.line("Workspace: "+r.Workspace) {
		return w.String()
	}
	w.sections(r, false)
	return w.String()
}

// othersTitle opens the brief of the other tasks in a memory message.
const othersTitle = "Other tasks of this session, whose turns this context leaves out (most recent first):"

// renderOthers writes the brief of other tasks within limit bytes
// (negative: none): each task's requests verbatim, what is unfinished, the
// files it changed and its latest progress, so that a request that builds
// on another task's work still reads it. The tasks share the room
// equally, a task leaving room unused passing it on to the next.
func renderOthers(others []Record, limit int) string {
	if len(others) == 0 {
		return ""
	}
	w := &renderer{limit: limit}
	if !w.line(othersTitle) {
		return ""
	}
	for k, o := range others {
		sub := &renderer{limit: -1}
		if limit >= 0 {
			sub.limit = w.room() / (len(others) - k)
		}
		if sub.line("Task " + o.Task + ":") {
			sub.sections(o, true)
		}
		w.WriteString(sub.String())
	}
	return w.String()
}

// sections adds r's sections in order of importance; brief keeps only
// those another task's request may build on.
func (w *renderer) sections(r Record, brief bool) {
	reqs := make([]string, len(r.Requirements))
	for i, q := range r.Requirements {
		reqs[i] = q.Text
		if q.Amends {
			reqs[i] = "(amends the above) " + q.Text
		}
	}
	reqs = r.omittedNote(reqs)
	var test []string
	if t := r.LastTest; t != nil {
		test = []string{strings.TrimSpace(command(t.Command) + " " + t.Outcome)}
	}
	cmds := make([]string, len(r.Commands))
	for i, c := range r.Commands {
		cmds[i] = command(c)
	}
	var summary []string
	if r.Summary != "" {
		summary = []string{r.Summary}
	}
	sections := []struct {
		title  string
		items  []string
		latest bool // keep the newest items when cut
		brief  bool // in the brief of another task
	}{
		{"Requirements (verbatim, oldest first):", reqs, false, true},
		{"Unfinished:", r.Unfinished, false, true},
		{"Last test:", test, false, false},
		{"Files changed:", r.FilesChanged, false, true},
		{"Progress:", r.Progress, true, true},
		{"Summary:", summary, false, true},
		{"Commands run:", cmds, true, false},
		{"Files read:", r.FilesRead, true, false},
	}
	for _, s := range sections {
		if len(s.items) > 0 && (s.brief || !brief) && !w.list(s.title, s.items, s.latest) {
			break
		}
	}
}

func command(c Command) string {
	s := "`" + c.Cmd + "`"
	if c.Exit != nil {
		s += " (exit " + strconv.Itoa(*c.Exit) + ")"
	}
	return s
}

// renderer builds text within a byte limit (negative: none).
type renderer struct {
	strings.Builder
	limit int
}

func (w *renderer) room() int {
	if w.limit < 0 {
		return int(^uint(0) >> 1)
	}
	return w.limit - w.Len()
}

// line adds s and a newline if they fit.
func (w *renderer) line(s string) bool {
	if len(s)+1 > w.room() {
		return false
	}
	w.WriteString(s)
	w.WriteByte('\n')
	return true
}

// item formats one list item; continuation lines are indented so that a
// multi-line requirement stays one item.
func item(s string) string { return "- " + strings.ReplaceAll(s, "\n", "\n  ") }

// list adds a titled list. When not every item fits it adds as many as
// fit (the first ones, or with latest the last ones), cuts the next one to
// the room left, and notes what it left out; it then reports false so that
// no later section is added.
func (w *renderer) list(title string, items []string, latest bool) bool {
	if !w.line(title) {
		return false
	}
	// How many items fit whole, leaving room for a note unless all fit.
	const noteRoom = 64
	n, size := 0, 0
	for ; n < len(items); n++ {
		i := n
		if latest {
			i = len(items) - 1 - n
		}
		l := len(item(items[i])) + 1
		if size+l > w.room() || (n < len(items)-1 && size+l > w.room()-noteRoom) {
			break
		}
		size += l
	}
	if n == len(items) {
		for _, it := range items {
			w.line(item(it))
		}
		return true
	}
	left := len(items) - n
	if latest {
		w.line(fmt.Sprintf("- [%d earlier not shown]", left))
		for _, it := range items[len(items)-n:] {
			w.line(item(it))
		}
		return false
	}
	for _, it := range items[:n] {
		w.line(item(it))
	}
	// Cut the next item to what is left; say how much was cut.
	next := item(items[n])
	// The note's longest form: fewer bytes cut never lengthens it.
	note := fmt.Sprintf(" [... %d bytes cut; %d more items not shown]", len(next), left-1)
	keep := w.room() - len(note) - 1
	if keep >= len(next) { // it fits whole beside a note
		w.line(fmt.Sprintf("%s [%d more items not shown]", next, left-1))
		return false
	}
	for keep > 0 && keep < len(next) && !utf8.RuneStart(next[keep]) {
		keep--
	}
	if keep > 0 {
		note = fmt.Sprintf(" [... %d bytes cut; %d more items not shown]", len(next)-keep, left-1)
		w.line(next[:keep] + note)
	}
	return false
}
