package chatlog

import (
	"regexp"
	"strings"

	"github.com/rcm-dev/rcm/internal/chat"
)

// SpecStory's markers: a user message opens at `_**User**_` (or with a
// date), a reply at `_**Assistant ...**_` or `_**Agent (...)**_`, a
// subagent's message at `_**Agent - sidechain (...)**_`.
var (
	specUser      = regexp.MustCompile(`(?m)^_\*\*User(?: \([^)]*\))?\*\*_[ \t]*\r?$`)
	specAssistant = regexp.MustCompile(`^_\*\*(?:Assistant|Agent)\b.*\*\*_\s*$`)
	// A subagent's messages (its prompt and its work), which the person's
	// conversation holds only the result of.
	specSidechain = regexp.MustCompile(`^_\*\*(?:User|Agent|Assistant) - sidechain\b.*\*\*_\s*$`)
	specToolUse   = regexp.MustCompile(`^Tool use: \*\*([^*]+)\*\*`)
	specEdit      = regexp.MustCompile(`<summary>Edit file: (.+?)</summary>`)
	specGrep      = regexp.MustCompile(`<summary>Grep (?:search )?for "(.*)"(?: in| •)`)
	specList      = regexp.MustCompile(`<summary>Listed (?:directory (.+?)|current directory) •`)
	specSummary   = regexp.MustCompile(`<summary>(.+?)</summary>`)
	// The old format (Cursor's exports of 2024 and early 2025) names no
	// tool: its searches and listings are <details> blocks whose summary
	// says what ran, named here as the later format names them.
	specOldSteps = []struct{ summary, name string }{
		{"Grep search for ", "grep_search"},
		{"Searched codebase ", "codebase_search"},
		{"Searched web ", "web_search"},
		{"Listed directory ", "list_dir"},
		{"Listed current directory ", "list_dir"},
	}
)

// parseSpecStory reads a SpecStory export: a user message is the text
// from its marker to the next assistant marker, without the "---" that
// closes its block; the reply runs to the next user marker, several
// assistant markers in a row being one reply.
func parseSpecStory(text, workdir string) []chat.Turn {
	// Lines keep a CRLF file's "\r": a message is quoted as it was
	// written; the markers allow it.
	lines := strings.Split(text, "\n")
	var turns []chat.Turn
	ids := 0
	var cur []string
	inUser := false
	end := func() {
		defer func() { cur = nil }()
		if len(turns) == 0 {
			return // the header
		}
		t := &turns[len(turns)-1]
		if inUser {
			t.Request = userText(cur)
		} else {
			t.Messages = specReply(cur, newWork(workdir, &ids))
		}
	}
	side := false // in a subagent's messages, which are left out
	for _, ln := range lines {
		switch {
		case specUser.MatchString(ln):
			end()
			turns = append(turns, chat.Turn{})
			inUser, side = true, false
		case specSidechain.MatchString(ln):
			if inUser {
				end()
				inUser = false
			}
			side = true
		case specAssistant.MatchString(ln):
			side = false
			if inUser {
				end()
				inUser = false
			} else {
				cur = append(cur, "---") // v2.1 opens each step with a marker
			}
		case !side:
			cur = append(cur, ln)
		}
	}
	end()
	return turns
}

// userText is a user block's text, trimmed, without the "---" lines that
// separate it from the reply.
func userText(lines []string) string {
	s := strings.TrimSpace(strings.Join(lines, "\n"))
	for strings.HasSuffix(s, "---") {
		s = strings.TrimSpace(strings.TrimSuffix(s, "---"))
	}
	return s
}

// specReply converts a reply: its blocks, separated by "---" (and
// "_****_" between the old format's tool steps), are text or a tool step.
func specReply(lines []string, w *work) []chat.Message {
	prev := "" // the element before, "" after anything else
	for _, b := range specBlocks(lines) {
		if e, ok := readElement(b); ok {
			// Cursor follows each element with an empty one of the same
			// tool: one call, not two.
			if !(e.name == prev && e.empty()) {
				e.add(w)
			}
			prev = e.name
			continue
		}
		if strings.TrimSpace(strings.Join(b, "")) != "" {
			prev = ""
		}
		if !specTool(b, w) {
			w.say(strings.Join(b, "\n"))
		}
	}
	return w.messages()
}

// specBlocks splits a reply at its separator lines outside code fences;
// v2.1's <tool-use> elements are blocks of their own, wherever they
// stand (a fence a tool's output left open ends at the next one), whole
// (their output may hold fences and "---"), and its <think> elements (the
// model's reasoning, which OpenCode does not send back; their fences do
// not count) are left out.
func specBlocks(lines []string) [][]string {
	var out [][]string
	var cur []string
	var f fence
	in, think, tool := false, false, false
	flush := func() { out, cur = append(out, cur), nil }
	for _, ln := range lines {
		t := strings.TrimSpace(ln)
		if !think && !tool && !in && strings.HasPrefix(t, "<think>") {
			think, ln = true, strings.TrimPrefix(t, "<think>")
		}
		if think {
			// It may close in mid-line, the reply running on after it.
			_, rest, ok := strings.Cut(ln, "</think>")
			if !ok || strings.TrimSpace(rest) == "" {
				think = !ok
				continue
			}
			think, ln = false, rest
			t = strings.TrimSpace(ln)
		}
		switch {
		case strings.HasPrefix(t, "<tool-use "):
			flush()
			tool, in = true, false
		case tool:
		case in:
			in = !f.closes(ln)
		case t == "---" || t == "_****_" || t == `_\*\*\*\*_`: // the last as one export escaped it
			flush()
			continue
		default:
			f, in = opening(ln)
		}
		cur = append(cur, ln)
		if tool && strings.HasSuffix(t, "</tool-use>") {
			flush()
			tool = false
		}
	}
	return append(out, cur)
}

// specTool adds the tool step a block shows, if it shows one: an edit
// (with the diff's old and new lines), a file read, a terminal command
// (with its output), a grep or directory listing, or another named tool.
// A read of "undefined" (the old format's) or an unnamed step is text.
func specTool(b []string, w *work) bool {
	name := ""
	rest := b
	for i, ln := range b {
		if strings.TrimSpace(ln) == "" {
			continue
		}
		if m := specToolUse.FindStringSubmatch(ln); m != nil {
			name, rest = m[1], b[i+1:]
		}
		break
	}
	if name == "" {
		name = oldStep(b)
	}
	body := strings.Join(rest, "\n")
	if m := specEdit.FindStringSubmatch(body); m != nil {
		old, neu := diffSides(fences(rest))
		w.call("edit", map[string]any{"filePath": w.abs(m[1]), "oldString": old, "newString": neu}, "Edit applied.")
		return true
	}
	for _, ln := range rest {
		if f, ok := strings.CutPrefix(strings.TrimSpace(ln), "Read file: "); ok && f != "undefined" {
			w.call("read", map[string]any{"filePath": w.abs(f)}, "(the log does not keep the file's content)")
			return true
		}
	}
	if name == "" {
		return false
	}
	out := strings.TrimSpace(body)
	if out == "" {
		out = "(no output recorded)"
	}
	list := specList.FindStringSubmatch(body)
	switch fs := fences(rest); {
	case name == "run_terminal_cmd" && len(fs) > 0:
		res := "(no output recorded)"
		if len(fs) > 1 {
			res = fs[1]
		}
		w.call("bash", map[string]any{"command": strings.TrimSpace(fs[0])}, res)
	case specGrep.MatchString(body):
		w.call("grep", map[string]any{"pattern": specGrep.FindStringSubmatch(body)[1]}, out)
	case list != nil && list[1] != "undefined":
		w.call("list", map[string]any{"path": w.abs(list[1])}, out)
	default:
		what := firstLine(out)
		if m := specSummary.FindStringSubmatch(body); m != nil {
			what = m[1]
		}
		w.call(toolName(name), map[string]any{"description": what}, out)
	}
	return true
}

// oldStep names the tool of an old-format step, or returns "": a
// <details> block opening with one of specOldSteps' summaries, or a
// terminal run, a block of nothing but a shell fence (the command) and
// perhaps a bare one (its output). Text with a command in it has words
// around the fence; a C# doc comment's <summary> is inside a fence.
func oldStep(b []string) string {
	var lines []string
	for _, ln := range b {
		if t := strings.TrimSpace(ln); t != "" {
			lines = append(lines, t)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	if lines[0] == "<details>" && len(lines) > 1 {
		for _, o := range specOldSteps {
			if strings.HasPrefix(lines[1], "<summary>"+o.summary) {
				return o.name
			}
		}
		return ""
	}
	var f fence
	in, n := false, 0
	for _, ln := range lines {
		switch {
		case in:
			in = !f.closes(ln)
		case n == 2:
			return "" // a third fence
		default:
			var ok bool
			if f, ok = opening(ln); !ok {
				return "" // text outside the fences
			}
			info := strings.TrimSpace(strings.TrimLeft(ln, "`"))
			if n == 0 && !shells[info] || n == 1 && info != "" {
				return ""
			}
			in, n = true, n+1
		}
	}
	if in {
		return ""
	}
	return "run_terminal_cmd"
}

// shells are the info strings of a fence that holds a command.
var shells = map[string]bool{"bash": true, "sh": true, "shell": true, "zsh": true, "powershell": true, "pwsh": true, "cmd": true}

// toolName names another tool as OpenCode names its own: todo_write is
// todowrite.
func toolName(name string) string {
	if n := strings.ReplaceAll(name, "_", ""); n != "" {
		return n
	}
	return "tool"
}

// fences returns the contents of a block's fenced code blocks.
func fences(lines []string) []string {
	var out []string
	var cur []string
	var f fence
	in := false
	for _, ln := range lines {
		switch {
		case in && f.closes(ln):
			out = append(out, strings.Join(cur, "\n"))
			in, cur = false, nil
		case in:
			cur = append(cur, ln)
		default:
			f, in = opening(ln)
		}
	}
	return out
}

// diffSides returns the old and new text of a SpecStory diff ("-", "+" and
// " " lines, each marker followed by a space; "@@" hunk headers dropped).
func diffSides(fs []string) (string, string) {
	var old, neu []string
	for _, f := range fs {
		for ln := range strings.SplitSeq(f, "\n") {
			if strings.HasPrefix(ln, "@@") || ln == "" {
				continue
			}
			text := strings.TrimPrefix(ln[1:], " ")
			switch ln[0] {
			case '-':
				old = append(old, text)
			case '+':
				neu = append(neu, text)
			default:
				old, neu = append(old, text), append(neu, text)
			}
		}
	}
	return joinLines(old), joinLines(neu)
}

// firstLine is a text's first non-empty line, at most 200 characters.
func firstLine(s string) string {
	for ln := range strings.SplitSeq(s, "\n") {
		if r := []rune(strings.TrimSpace(ln)); len(r) > 0 {
			return string(r[:min(len(r), 200)])
		}
	}
	return ""
}
