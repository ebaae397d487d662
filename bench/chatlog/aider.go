package chatlog

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rcm-dev/rcm/internal/chat"
)

// aiderStart opens each session of an aider history file.
const aiderStart = "# aider chat started at"

// aiderSessions splits an aider history file into its sessions, each from
// its start line; a file with at most one is itself.
func aiderSessions(text string) []string {
	var starts []int
	for i := 0; i < len(text); {
		if strings.HasPrefix(text[i:], aiderStart) {
			starts = append(starts, i)
		}
		nl := strings.IndexByte(text[i:], '\n')
		if nl < 0 {
			break
		}
		i += nl + 1
	}
	if len(starts) > 0 && starts[0] > 0 && aiderLine.MatchString(text[:starts[0]]) {
		starts = append([]int{0}, starts...) // a history copied from its middle
	}
	if len(starts) <= 1 {
		return []string{text}
	}
	out := make([]string, len(starts))
	for k, s := range starts {
		end := len(text)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		out[k] = text[s:end]
	}
	return out
}

// aiderCleared splits one aider session where aider started its chat
// over: after /clear or /reset (or an abbreviation aider ran as one,
// "/cle") it sends none of the earlier messages and, sending no session
// id, is a new conversation to rcm (the id rcm derives from a
// conversation's opening changes). Each part after the first opens at the
// request after such a command; a run of them is one cut, and a clear
// with only commands (a request opening with "/") before it since the
// last cut cuts nothing. A command aider refused ("Ambiguous command",
// "Invalid command") cuts nothing.
func aiderCleared(text string) []string {
	type run struct {
		at      int // the offset of its first line
		request string
		refused bool
	}
	var runs []run
	inRun := false
	for off := 0; off < len(text); {
		next := len(text)
		if nl := strings.IndexByte(text[off:], '\n'); nl >= 0 {
			next = off + nl + 1
		}
		ln := strings.TrimRight(text[off:next], "\r\n")
		switch {
		case aiderUser(ln) && inRun:
			runs[len(runs)-1].request += "\n" + ln[len("#### "):]
		case aiderUser(ln):
			runs, inRun = append(runs, run{at: off, request: ln[len("#### "):]}), true
		default:
			inRun = false
			if len(runs) > 0 && (strings.HasPrefix(ln, "> Ambiguous command") || strings.HasPrefix(ln, "> Invalid command")) {
				runs[len(runs)-1].refused = true
			}
		}
		off = next
	}
	var parts []string
	from, pending, said := 0, false, false
	for _, r := range runs {
		clear := aiderClears(r.request) && !r.refused
		if pending && !clear {
			parts, from, said = append(parts, text[from:r.at]), r.at, false
		}
		// Only a cleared chat cuts: clearing after nothing but commands
		// (a session opened with /clear) forgets nothing.
		pending = clear && said
		said = said || !strings.HasPrefix(r.request, "/")
	}
	return append(parts, text[from:])
}

// aiderClears reports whether a request is aider's /clear or /reset: its
// first word is either, or a prefix of either that aider would take for
// it (at least "/cl" or "/re"; an ambiguous one aider refuses, which
// aiderCleared checks). Aider's commands are case-sensitive.
func aiderClears(request string) bool {
	f := strings.Fields(request)
	if len(f) == 0 || len(f[0]) < len("/cl") {
		return false
	}
	return strings.HasPrefix("/clear", f[0]) || strings.HasPrefix("/reset", f[0])
}

// aider's "Added FILE to the chat" (also "(read-only)", or with a
// period), and the count of a shell run's lines it says the same of.
var (
	aiderAdded  = regexp.MustCompile(`^Added (.+?) to the chat(?: \(read-only\))?\.?$`)
	aiderOutput = regexp.MustCompile(`^\d+ lines? of output$`)
	// Its question whether to add a file the reply names, with the
	// default in brackets and the person's answer (empty for the default).
	aiderAsk = regexp.MustCompile(`^Add (.+?) to the chat\? .*\[(\w+)\]: ?(\S*)$`)
)

// asked returns the file an "Add FILE to the chat?" line added, if the
// answer (or its default) was yes or all; a URL is no file. Later aiders
// ask "Add file to the chat?" under a line naming it (prev).
func asked(out, prev string) (string, bool) {
	m := aiderAsk.FindStringSubmatch(out)
	if m != nil && m[1] == "file" {
		m[1] = fileName(prev)
	}
	if m == nil || m[1] == "" || strings.Contains(m[1], "://") || strings.ContainsAny(m[1], " \t") && !strings.ContainsAny(m[1], "./\\") {
		return "", false
	}
	a := strings.ToLower(m[3])
	if a == "" {
		a = strings.ToLower(m[2])
	}
	return m[1], strings.HasPrefix(a, "y") || strings.HasPrefix(a, "a")
}

// aiderUser reports whether a line is a user line: aider writes "#### "
// and the text with two trailing spaces (a markdown hard break), which the
// replies' own "#### " headings lack.
func aiderUser(ln string) bool {
	return strings.HasPrefix(ln, "#### ") && strings.HasSuffix(ln, "  ")
}

// parseAider reads an aider chat history: each run of user lines is a
// message (the lines without "#### " and trailing spaces, joined by
// newlines, trimmed); the lines up to the next message are its reply.
func parseAider(text, workdir string) []chat.Turn {
	lines := strings.Split(text, "\n")
	for i, ln := range lines {
		lines[i] = strings.TrimSuffix(ln, "\r")
	}
	var turns []chat.Turn
	ids := 0
	var reply []string
	flush := func() {
		if len(turns) > 0 {
			t := &turns[len(turns)-1]
			t.Messages = aiderReply(t.Request, reply, newWork(workdir, &ids))
		}
		reply = nil
	}
	for i := 0; i < len(lines); {
		if !aiderUser(lines[i]) {
			if !strings.HasPrefix(lines[i], aiderStart) {
				reply = append(reply, lines[i])
			}
			i++
			continue
		}
		flush()
		var msg []string
		for ; i < len(lines) && aiderUser(lines[i]); i++ {
			// Without any trailing space: aider's two, and the person's own
			// (a line typed as "/ask " reads "/ask").
			msg = append(msg, strings.TrimRight(lines[i][len("#### "):], " \t"))
		}
		turns = append(turns, chat.Turn{Request: strings.TrimSpace(strings.Join(msg, "\n"))})
	}
	flush()
	return turns
}

// aiderReply converts a reply: aider's own output ("> " lines) says which
// files were added to the chat (read calls: before the text when added
// before it, as /add does), which edits landed and which shell commands
// ran; the rest is the model's text, whose SEARCH/REPLACE blocks (and
// whole files aider says it edited) become edit and write calls. Shell
// runs come after the text, as aider runs them once the reply is done; a
// command the request ran (/run, !) comes first, with the output aider
// printed before the reply.
func aiderReply(request string, lines []string, w *work) []chat.Message {
	// A command the person ran (/run CMD, or !CMD) ran before the reply;
	// aider logs its output, when it does, as its own "> " lines.
	cmd, typed := strings.CutPrefix(request, "/run ")
	if !typed {
		cmd, typed = strings.CutPrefix(request, "!")
	}
	var printed []string
	var prose []string
	applied := map[string]bool{}
	type run struct{ cmd, added string }
	var runs []run
	var early, late []string // files added to the chat before the reply's text, and after
	said := false
	prev := ""
	for _, ln := range lines {
		out, ok := strings.CutPrefix(ln, "> ")
		if !ok && strings.HasPrefix(ln, "(Y)es/") {
			continue // a prompt of aider's that it wrapped past its "> "
		}
		if !ok && ln != ">" {
			prose = append(prose, ln)
			said = said || strings.TrimSpace(ln) != ""
			continue
		}
		out = strings.TrimSpace(out)
		added := aiderAdded.FindStringSubmatch(out)
		if f, ok := asked(out, prev); ok {
			added = []string{out, f}
		}
		prev = out
		if typed && !said && added == nil && !strings.HasPrefix(out, "Add ") {
			printed = append(printed, out)
		}
		switch {
		case strings.HasPrefix(out, "Applied edit to "):
			applied[w.abs(strings.TrimPrefix(out, "Applied edit to "))] = true
		case strings.HasPrefix(out, "Running "):
			runs = append(runs, run{cmd: strings.TrimPrefix(out, "Running ")})
		case added != nil && aiderOutput.MatchString(added[1]):
			if len(runs) > 0 {
				runs[len(runs)-1].added = added[1]
			}
		case added != nil && !said:
			early = append(early, added[1])
		case added != nil:
			late = append(late, added[1])
		}
	}
	seen := map[string]bool{}
	read := func(files []string) {
		for _, f := range files {
			if seen[f] {
				continue // asked and then said added
			}
			seen[f] = true
			w.call("read", map[string]any{"filePath": w.abs(f)}, "(aider added the file to the chat; the log does not keep its content)")
		}
	}
	if cmd = strings.TrimSpace(cmd); typed && cmd != "" {
		result := strings.Join(printed, "\n")
		if strings.TrimSpace(result) == "" {
			result = "(aider's log does not keep this command's output)"
		}
		w.call("bash", map[string]any{"command": cmd}, result)
	}
	read(early)
	var text []string
	for i := 0; i < len(prose); i++ {
		f, ok := aiderOpening(prose[i])
		if !ok {
			text = append(text, prose[i])
			continue
		}
		end := fenceEnd(prose, i+1, f)
		body := prose[i+1 : end]
		named := ""
		if len(text) > 0 {
			named = fileName(text[len(text)-1])
		}
		edits, usedName := searchReplace(body, named)
		if len(edits) == 0 && named != "" && applied[w.abs(named)] {
			edits, usedName = []edit{{file: named, replace: strings.Join(body, "\n") + "\n", whole: true}}, true
		}
		if len(edits) == 0 {
			text = append(text, prose[i:min(end+1, len(prose))]...)
			i = end
			continue
		}
		if usedName {
			text = text[:len(text)-1]
		}
		w.say(strings.Join(text, "\n"))
		text = nil
		for _, e := range edits {
			file := w.abs(e.file)
			result := "(the log does not confirm this edit)"
			if applied[file] {
				result = "Applied edit to " + e.file
			}
			switch {
			case e.whole || e.search == "":
				w.call("write", map[string]any{"filePath": file, "content": e.replace}, result)
			default:
				w.call("edit", map[string]any{"filePath": file, "oldString": e.search, "newString": e.replace}, result)
			}
		}
		i = end
	}
	w.say(strings.Join(text, "\n"))
	read(late)
	for _, r := range runs {
		result := "(aider's log does not keep this command's output)"
		if r.added != "" {
			result = fmt.Sprintf("(aider's log does not keep this command's output; %s of it were added to the chat)", r.added)
		}
		w.call("bash", map[string]any{"command": r.cmd}, result)
	}
	return w.messages()
}

// fenceEnd returns the index of the line closing the fence whose body
// starts at from (len(lines) when none does). Inside a SEARCH/REPLACE
// block a fence line is the edited file's own (a README's code block).
func fenceEnd(lines []string, from int, f fence) int {
	block := false
	for i := from; i < len(lines); i++ {
		switch {
		case strings.HasPrefix(lines[i], "<<<<<<< SEARCH"):
			block = true
		case strings.HasPrefix(lines[i], ">>>>>>> REPLACE"):
			block = false
		case !block && f.closes(lines[i]):
			return i
		}
	}
	return len(lines)
}

// edit is one SEARCH/REPLACE block, or a whole file.
type edit struct {
	file, search, replace string
	whole                 bool
}

// searchReplace reads the SEARCH/REPLACE blocks of a fence's body, named
// the file the line before the fence names, or (aider's diff-fenced
// format) a file-name line inside the fence. It reports whether an edit
// took its file from named.
func searchReplace(body []string, named string) ([]edit, bool) {
	var out []edit
	usedName := false
	file := ""
	var cur *edit
	var search, replace []string
	state := 0 // 0 outside a block, 1 in SEARCH, 2 in REPLACE
	for _, ln := range body {
		switch {
		case state == 0 && strings.HasPrefix(ln, "<<<<<<< SEARCH"):
			f := file
			if f == "" {
				f, usedName = named, named != ""
			}
			if f == "" {
				return nil, false // no file to edit: leave the block as text
			}
			cur, search, replace, state = &edit{file: f}, nil, nil, 1
		case state == 0:
			if f := fileName(ln); f != "" {
				file = f
			}
		case state == 1 && strings.HasPrefix(ln, "======="):
			state = 2
		case state == 1:
			search = append(search, ln)
		case state == 2 && strings.HasPrefix(ln, ">>>>>>> REPLACE"):
			cur.search, cur.replace = joinLines(search), joinLines(replace)
			out = append(out, *cur)
			state = 0
		case state == 2:
			replace = append(replace, ln)
		}
	}
	return out, usedName
}

// joinLines joins lines as the file holds them, each ended by a newline.
func joinLines(ls []string) string {
	if len(ls) == 0 {
		return ""
	}
	return strings.Join(ls, "\n") + "\n"
}

// fileName is the file a line names when it is only a file name (aider
// writes it alone, sometimes in backticks or bold), else "".
func fileName(ln string) string {
	s := strings.Trim(strings.TrimSpace(ln), "`*")
	if s == "" || len(s) > 200 || strings.ContainsAny(s, " \t<>|\"'") || strings.HasSuffix(s, ":") || strings.HasSuffix(s, ".") {
		return ""
	}
	if !strings.ContainsAny(s, "./\\") {
		return ""
	}
	return s
}
