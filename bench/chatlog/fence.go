package chatlog

import "strings"

// fence is an open code fence: how many backticks opened it, as CommonMark
// reads fences. A fence closes only at a line of at least as many
// backticks and nothing else, so a README's "```bash" inside aider's
// "````" fence, or a diff's context line "  ```kotlin", is the fence's
// content, not its end. A diff's lines are all indented by their "+", "-"
// or " " column, so a diff fence closes only at a line with no indent.
// Indents are otherwise not counted (a fence in a list item is indented),
// and only backtick fences are read (the logs write no others).
type fence struct {
	n    int
	diff bool
	tag  string // aider's other fences: <source> ... </source>
}

// opening returns the fence ln opens: three or more backticks, then an
// info string that holds none.
func opening(ln string) (fence, bool) {
	s := strings.TrimSpace(ln)
	n := len(s) - len(strings.TrimLeft(s, "`"))
	info := strings.TrimSpace(s[n:])
	if n < 3 || strings.Contains(info, "`") {
		return fence{}, false
	}
	return fence{n: n, diff: info == "diff"}, true
}

// aiderTags are the fences aider writes instead of backticks when a file
// holds them (aider's all_fences).
var aiderTags = []string{"source", "code", "pre", "codeblock", "sourcecode"}

// aiderOpening returns the fence ln opens in an aider reply: a backtick
// fence, or one of aiderTags (with a language after it, "<source>python").
func aiderOpening(ln string) (fence, bool) {
	s := strings.TrimSpace(ln)
	for _, t := range aiderTags {
		if rest, ok := strings.CutPrefix(s, "<"+t+">"); ok && !strings.ContainsAny(rest, " <") {
			return fence{tag: t}, true
		}
	}
	return opening(ln)
}

// closes reports whether ln closes f.
func (f fence) closes(ln string) bool {
	s := strings.TrimSpace(ln)
	if f.tag != "" {
		return s == "</"+f.tag+">"
	}
	if f.diff && strings.TrimLeft(ln, " \t") != ln {
		return false
	}
	return len(s) >= f.n && strings.Trim(s, "`") == ""
}
