package router

import (
	"regexp"
	"strings"

	"github.com/rcm-dev/rcm/internal/str"
	"github.com/rcm-dev/rcm/transcript"
)

// signals are the cheap facts of one turn: an explicit tag and the
// workspaces it names or works in.
type signals struct {
	tag string
	// workspaces named by the request text, used as a working directory
	// by a tool call, or touched by any path of a tool call.
	named, workdirs, touched []string
	words                    int // terms of the request (with repeats)
}

// codexAsk is the line before the person's request in the messages Codex's
// IDE extension and desktop app send: what comes before it (the active
// file, open tabs, files mentioned) is the editor's state, not the request.
const codexAsk = "## My request for Codex:"

// codexAskWithin bounds where codexAsk is looked for: the editor's state
// before it is a list of file names, and a pasted log must not be searched
// whole on every call.
const codexAskWithin = 16 << 10

// asked is the request turn tn's first message holds, as the person wrote it.
func asked(t *transcript.Transcript, tn transcript.Turn) string {
	text := t.Messages[tn.Start].Text()
	if i := strings.Index(str.Clip(text, codexAskWithin), codexAsk); i >= 0 && (i == 0 || text[i-1] == '\n') {
		return strings.TrimSpace(text[i+len(codexAsk):])
	}
	return text
}

// read gathers the signals of turn tn, reading the first cap bytes of its
// request, and, when terms is not nil, feeds the lexical terms of the
// request to terms and those of its tool calls to args.
func read(t *transcript.Transcript, f *frame, tn transcript.Turn, cap int, terms, args func(term, int)) signals {
	req := str.Clip(asked(t, tn), cap)
	s := signals{tag: writtenTag(req)}
	n := 0
	c := collector{f: f, terms: func(h term, kind int) {
		n++
		if terms != nil {
			terms(h, kind)
		}
	}, roots: &s.named}
	scan(req, f, &c)
	s.words = n
	c.terms = args
	c.roots, c.workdirs = &s.touched, &s.workdirs
	eachCall(t, tn, func(args string) { scan(str.Clip(args, argumentCap), f, &c) })
	if terms != nil && cap == requestCap {
		// An earlier turn's last answer: what the person read before
		// asking the next thing, and often what the next request quotes.
		for k := tn.End - 1; k > tn.Start; k-- {
			if m := &t.Messages[k]; m.Role == "assistant" {
				if text := m.Text(); text != "" {
					scan(str.Clip(text, answerCap), f, &collector{f: f, terms: terms, roots: &[]string{}})
					break
				}
			}
		}
	}
	return s
}

// eachCall visits the arguments of the turn's tool calls, at most callsCap
// of them: the first half and the last half, so that a long turn shows both
// where it started and where it is now.
func eachCall(t *transcript.Transcript, tn transcript.Turn, fn func(string)) {
	total := 0
	for i := tn.Start; i < tn.End; i++ {
		total += len(t.Messages[i].ToolCalls)
	}
	k := 0
	for i := tn.Start; i < tn.End; i++ {
		for _, c := range t.Messages[i].ToolCalls {
			if k < callsCap/2 || k >= total-callsCap/2 {
				fn(c.Arguments)
			}
			k++
		}
	}
}

type collector struct {
	f        *frame
	terms    func(term, int)
	roots    *[]string // workspaces; with raw, the paths themselves
	workdirs *[]string // nil while reading the request
	raw      bool      // keep paths, not workspaces (readFrame)
}

func (c *collector) term(h term, kind int) {
	if c.terms != nil {
		c.terms(h, kind)
	}
}

func (c *collector) path(p, ws string, workdir bool) {
	if c.raw {
		ws = p
	}
	if ws == "" {
		return
	}
	if !c.raw && c.f.repo && strings.HasPrefix(ws, "/") && workdir && c.workdirs != nil {
		// The agent works outside the repository: its folders there are
		// checkouts (see frame.outside).
		c.f.outside = true
	}
	*c.roots = addRoot(*c.roots, ws)
	if workdir && c.workdirs != nil {
		*c.workdirs = addRoot(*c.workdirs, ws)
	}
}

func addRoot(roots []string, r string) []string {
	for _, x := range roots {
		if x == r {
			return roots
		}
	}
	return append(roots, r)
}

// writtenTag returns the task named by the written convention
// "[task: NAME]" in a request (the first one; case-insensitive keyword,
// NAME lower-cased: 1 to 64 letters, digits, '-', '_', '.', '/'), or "".
func writtenTag(text string) string {
	for rest := text; ; {
		i := strings.IndexByte(rest, '[')
		if i < 0 {
			return ""
		}
		rest = rest[i+1:]
		if len(rest) < 5 || !strings.EqualFold(rest[:4], "task") {
			continue
		}
		body := strings.TrimLeft(rest[4:], " \t")
		if body == "" || body[0] != ':' {
			continue
		}
		body = strings.TrimLeft(body[1:], " \t")
		end := strings.IndexByte(body, ']')
		if end < 0 {
			return ""
		}
		name := strings.TrimRight(body[:end], " \t")
		if validName(name) {
			return strings.ToLower(name)
		}
	}
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !str.WordByte(c) && c != '-' && c != '.' && c != '/' {
			return false
		}
	}
	return true
}

// wordCount counts words, and in scripts written without spaces one word
// per two characters (a Chinese or Japanese sentence is one field).
func wordCount(fields []string) int {
	n := 0
	for _, w := range fields {
		dense := 0
		for _, r := range w {
			if isDense(r) {
				dense++
			}
		}
		n += max(1, (dense+1)/2)
	}
	return n
}

// slash reports whether w is a slash command such as "/review" or
// "/pr-review:review-pr" (and not a path such as "/work/ws1").
func slash(w string) bool {
	if len(w) < 2 || w[0] != '/' || !letter(w[1]) {
		return false
	}
	for i := 2; i < len(w); i++ {
		c := w[i]
		if !str.WordByte(c) && c != '-' && c != ':' {
			return false
		}
	}
	return true
}

// artifacts are how harnesses open the user messages they write
// themselves: Claude Code's notice of a loaded tool, the text of a skill
// it launched, a slash command's expansion and output, the caveat before
// local commands' output, an interruption marker, the notice that a
// background command or agent finished (Cursor's too, after the
// <timestamp> line it opens its messages with); VS Code Copilot's notice
// that a terminal command completed ("[Terminal ID notification: ...");
// aider's own lines. (VS Code Copilot's "@agent Try Again" and "@agent
// Continue" buttons are left to the fit: as artifacts, held out through
// the proxy, 5 of the 83 returns fell back more and 4 return calls went
// to a wrong task.)
var artifacts = []string{"Tool loaded.", "Base directory for this skill:", "<command-name>", "<command-message>",
	"<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>", "<task-notification>", "<system_notification>",
	"Caveat: The messages below were generated by the user while running local commands",
	"[Request interrupted by user", "<bash-input>", "<bash-stdout>", "<user-prompt-submit-hook>"}

// copilotTerminal opens VS Code Copilot's notice that a terminal command
// it started has completed: "[Terminal ID notification: command completed".
var copilotTerminal = regexp.MustCompile(`^\[Terminal [0-9a-fA-F-]+ notification: `)

// ranLocally reports whether a harness's own message is a command that ran
// without the model (its output, a notice, aider's bare /model) rather
// than Claude Code's invocation of a command whose expansion follows it:
// the message after it is not an addendum to it.
func ranLocally(text string) bool {
	if !artifact(text) {
		return false
	}
	text = str.Clip(text, 512)
	invoked := (strings.HasPrefix(strings.TrimSpace(text), "<command-") || strings.Contains(text, "<command-name>")) && !strings.Contains(text, "<local-command-")
	return !invoked
}

// artifact reports whether a request is a harness's own message, or a bare
// slash command, which never opens a task.
func artifact(text string) bool {
	text = strings.TrimSpace(str.Clip(text, 160))
	if rest, ok := strings.CutPrefix(text, "<timestamp>"); ok {
		if _, after, ok := strings.Cut(rest, "</timestamp>"); ok {
			text = strings.TrimSpace(after)
		}
	}
	for _, p := range artifacts {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	if copilotTerminal.MatchString(text) {
		return true
	}
	f := strings.Fields(text)
	return len(f) > 0 && len(f) <= 3 && slash(f[0])
}
