package compaction

import (
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rcm-dev/rcm/internal/str"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// SplitSummary attributes a task-aware summary (the answer to a call that
// Rewrite rewrote) to its tasks: it returns, for each id of taskIDs that has
// a "Task <id>" heading, the text of its section, heading line included.
//
// Headings of any level count ("# Task a", "### Task: `a`", "## **Task
// a** (active)"); a section runs to the next heading of the same or a
// higher level. Headings inside code fences do not count. An id matches
// exactly, else case-insensitively; of ids that are prefixes of one another
// the longest wins. A task whose heading appears twice gets both sections,
// joined; a task with no section has no key; headings of unknown tasks are
// ordinary text of whatever section holds them.
func SplitSummary(summary string, taskIDs []string) map[string]string {
	// Claude Code's answers hold the summary inside <summary></summary>,
	// after an <analysis> block that may name tasks too.
	if _, in, ok := strings.Cut(summary, "<summary>"); ok {
		summary, _, _ = strings.Cut(in, "</summary>")
	}
	sections, _, _ := split(summary, taskIDs)
	return sections
}

// split does SplitSummary's work and also returns the general text, that
// outside every task section, and whether any task section was found.
func split(summary string, ids []string) (sections map[string]string, general string, found bool) {
	sections = make(map[string]string)
	var gen, cur strings.Builder
	task, level := "", 0
	closeTask := func() {
		if task == "" {
			return
		}
		// Only the blanks that end a heading line are trimmed: trimming
		// "#\v" to "#" would turn text into a heading, and the section
		// would no longer split to itself.
		s := strings.TrimRight(cur.String(), " \t\r\n")
		if prev, ok := sections[task]; ok {
			s = prev + "\n\n" + s
		}
		sections[task] = s
		cur.Reset()
		task = ""
	}
	fence := ""
	for rest := summary; rest != ""; {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = ""
		}
		if f := fenceOf(line); f != "" && (fence == "" || strings.HasPrefix(f, fence)) {
			if fence == "" {
				fence = f
			} else {
				fence = ""
			}
		} else if fence == "" {
			if lv, title := headingOf(line); lv > 0 {
				if id := taskOf(title, ids); id != "" {
					closeTask()
					task, level, found = id, lv, true
				} else if task != "" && lv <= level {
					closeTask()
				}
			}
		}
		if task != "" {
			cur.WriteString(line)
		} else {
			gen.WriteString(line)
		}
	}
	closeTask()
	return sections, strings.TrimSpace(gen.String()), found
}

// fenceOf returns the fence marker (``` or ~~~, as long as written) that
// opens or closes a code block on line, or "".
func fenceOf(line string) string {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 || len(s) < 3 || (s[0] != '`' && s[0] != '~') {
		return ""
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 {
		return ""
	}
	return s[:n]
}

// headingOf returns the level and title of a Markdown ATX heading line, or
// level 0.
func headingOf(line string) (int, string) {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 {
		return 0, ""
	}
	n := 0
	for n < len(s) && s[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(s) && s[n] != ' ' && s[n] != '\t' && s[n] != '\n' && s[n] != '\r') {
		return 0, ""
	}
	title := strings.TrimSpace(s[n:])
	title = strings.TrimSpace(strings.TrimRight(title, "#"))
	return n, title
}

// taskOf returns the id of taskIDs that heading title names ("Task <id>",
// decorations allowed), or "".
func taskOf(title string, ids []string) string {
	s := strings.TrimLeft(title, "*_ ")
	if len(s) < 5 || !strings.EqualFold(s[:4], "task") {
		return ""
	}
	s = s[4:]
	t := strings.TrimLeft(s, " \t:#")
	if len(t) == len(s) {
		return "" // "Tasks", "Taskbar": not a task heading
	}
	t = strings.TrimLeft(t, "`'\"*_")
	best := ""
	for pass := 0; pass < 2 && best == ""; pass++ {
		for _, id := range ids {
			if len(id) <= len(best) || len(id) > len(t) {
				continue
			}
			match := t[:len(id)] == id
			if pass == 1 {
				match = strings.EqualFold(t[:len(id)], id)
			}
			if match && boundary(t[len(id):]) {
				best = id
			}
		}
	}
	return best
}

// boundary reports whether an id may end where rest begins.
func boundary(rest string) bool {
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_-./", r)
}

// ScopeSummary scopes the post-compaction summary, for a call about task,
// to that task: turn is the index of a Summary turn of t, sections the
// summary's per-task sections (as SplitSummary returned them when the
// summary came back). It returns a Replace for the summary's assistant
// message holding the summary's general text (that outside every task
// section) and task's section only; when the summary has no section for
// task, the general text and a note saying so. Claude Code's summary is
// in the turn's own user message instead (on any wire), between its
// framing texts, which stay. It returns false, and the
// summary is to be kept whole, when the turn is no Summary turn or the
// summary has no per-task sections.
func ScopeSummary(t *transcript.Transcript, turn int, task string, sections map[string]string) (map[int][]byte, bool) {
	if turn < 0 || turn >= len(t.Turns) || t.Turns[turn].Kind != transcript.Summary || len(sections) == 0 {
		return nil, false
	}
	tr := t.Turns[turn]
	if _, ok := continued(t.Messages[tr.Start].Raw); ok {
		return scopeContinued(t, tr.Start, task, sections)
	}
	answer := -1
	for i := tr.Start + 1; i < tr.End && answer < 0; i++ {
		if t.Messages[i].Role == "assistant" {
			answer = i
		}
	}
	if answer < 0 {
		return nil, false
	}
	text, ok := scoped(t.Messages[answer].Text(), task, sections)
	if !ok {
		return nil, false
	}
	raw, err := withContent(t.Messages[answer].Raw, text)
	if err != nil {
		return nil, false
	}
	return map[int][]byte{answer: raw}, true
}

// ScopeMessage scopes a summary carried whole by message i of t (Codex's
// post-compaction message, transcript.Summaries) to task: the message's
// content becomes its general text (Codex's framing included) and task's
// section only. It returns false, and the message is to be kept whole, when
// the summary has no per-task sections.
func ScopeMessage(t *transcript.Transcript, i int, task string, sections map[string]string) ([]byte, bool) {
	if i < 0 || i >= len(t.Messages) || len(sections) == 0 {
		return nil, false
	}
	text, ok := scoped(t.Messages[i].Text(), task, sections)
	if !ok {
		return nil, false
	}
	raw, err := withContent(t.Messages[i].Raw, text)
	if err != nil {
		return nil, false
	}
	return raw, true
}

// scoped returns summary with only task's section besides the general
// text (see ScopeSummary); false when it has no task sections.
func scoped(summary, task string, sections map[string]string) (string, bool) {
	ids := make([]string, 0, len(sections)+1)
	for id := range sections {
		ids = append(ids, id)
	}
	if _, ok := sections[task]; !ok {
		ids = append(ids, task)
	}
	sort.Strings(ids)
	parsed, general, found := split(summary, ids)
	if !found {
		return "", false
	}
	own := sections[task]
	if strings.TrimSpace(own) == "" {
		own = parsed[task]
	}
	if strings.TrimSpace(own) == "" {
		own = "[rcm: the summary has no section for task " + task + "; other tasks' sections omitted]"
	}
	text := own
	if general != "" {
		text = general + "\n\n" + own
	}
	return text, true
}

// Claude Code's post-compaction message puts the summary between these.
const (
	continuedSummary = "Summary:\n"
	continuedAfter   = "\n\nIf you need specific details from before compaction"
)

// SummaryText returns the summary a Summary turn of t holds: the summary
// inside Claude Code's continuation message, else the answer to OpenCode's
// recap question; "" when there is none.
func SummaryText(t *transcript.Transcript, turn int) string {
	if turn < 0 || turn >= len(t.Turns) || t.Turns[turn].Kind != transcript.Summary {
		return ""
	}
	tr := t.Turns[turn]
	if c, ok := continued(t.Messages[tr.Start].Raw); ok {
		return c.summary
	}
	for i := tr.Start + 1; i < tr.End; i++ {
		if t.Messages[i].Role == "assistant" {
			return t.Messages[i].Text()
		}
	}
	return ""
}

// continuation is Claude Code's post-compaction message cut around the
// summary: the JSON path of the text holding it, and the text before, of
// and after the summary.
type continuation struct {
	path, head, summary, tail string
}

func continued(raw []byte) (continuation, bool) {
	c := gjson.GetBytes(raw, "content")
	path, text := "content", c.String()
	if c.IsArray() {
		path, text = "", ""
		i := 0
		c.ForEach(func(_, b gjson.Result) bool {
			if s := b.Get("text").String(); strings.Contains(s, continuedSummary) {
				path, text = "content."+strconv.Itoa(i)+".text", s
				return false
			}
			i++
			return true
		})
	}
	i := strings.Index(text, continuedSummary)
	if path == "" || i < 0 {
		return continuation{}, false
	}
	k := continuation{path: path, head: text[:i+len(continuedSummary)], summary: text[i+len(continuedSummary):]}
	if j := strings.Index(k.summary, continuedAfter); j >= 0 {
		k.summary, k.tail = k.summary[:j], k.summary[j:]
	}
	return k, true
}

// scopeContinued scopes Claude Code's post-compaction summary, which is in
// the turn's own user message, keeping Claude Code's framing around it and
// every other block as sent.
func scopeContinued(t *transcript.Transcript, at int, task string, sections map[string]string) (map[int][]byte, bool) {
	raw := t.Messages[at].Raw
	c, ok := continued(raw)
	if !ok {
		return nil, false
	}
	own, ok := scoped(c.summary, task, sections)
	if !ok {
		return nil, false
	}
	out, err := sjson.SetRawBytes(raw, c.path, str.Quote(c.head+own+c.tail))
	if err != nil {
		return nil, false
	}
	return map[int][]byte{at: out}, true
}
