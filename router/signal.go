package router

import (
	"strings"

	"github.com/rcm-dev/rcm/internal/str"
	"github.com/rcm-dev/rcm/transcript"
)

// signals are the cheap facts of one turn: an explicit tag, whether its
// request is a short follow-up, and the workspaces it names or works in.
type signals struct {
	tag      string
	followup bool
	// workspaces named by the request text, used as a working directory
	// by a tool call, or touched by any path of a tool call.
	named, workdirs, touched []string
	words                    int  // terms of the request (with repeats)
	continues                bool // the request opens with a reply word
}

// read gathers the signals of turn tn, reading the first cap bytes of its
// request, and, when terms is not nil, feeds the turn's lexical terms to it.
func read(t *transcript.Transcript, f *frame, tn transcript.Turn, cap int, terms func(term, int)) signals {
	req := str.Clip(t.Messages[tn.Start].Text(), cap)
	s := signals{tag: writtenTag(req), followup: isFollowUp(req)}
	n := 0
	c := collector{f: f, terms: func(h term, kind int) {
		n++
		if terms != nil {
			terms(h, kind)
		}
	}, roots: &s.named}
	scan(req, f, &c)
	s.words = n
	if f := strings.Fields(str.Clip(req, 64)); len(f) > 0 {
		first := strings.ToLower(strings.TrimRight(f[0], ",.!:;"))
		s.continues = replyWords[first]
	}
	s.continues = s.continues || refersBack(req)
	c.terms = terms
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

// followWords open short replies that continue whatever the agent was doing.
var followWords = map[string]bool{
	"yes": true, "yeah": true, "yep": true, "yup": true, "ok": true, "okay": true, "sure": true,
	"go": true, "do": true, "please": true, "continue": true, "proceed": true, "commit": true,
	"push": true, "lgtm": true, "sounds": true, "thanks": true, "great": true, "perfect": true,
	"nice": true, "let's": true, "lets": true, "now": true, "and": true, "also": true,
	"fine": true, "good": true, "cool": true, "right": true, "exactly": true, "no": true,
	"nope": true, "done": true, "retry": true, "again": true, "that": true, "agreed": true,
}

// replyWords open a request that answers the agent or adds to what was
// said: it continues the conversation rather than starting something.
var replyWords = map[string]bool{
	"and": true, "also": true, "but": true, "plus": true, "yes": true, "yeah": true, "yep": true,
	"ok": true, "okay": true, "sure": true, "right": true, "no": true, "nope": true,
}

// backPhrases in a request's opening line refer to work already under way
// ("back to the parser", "more on that issue"): the request returns to a
// task, however new its pasted text looks.
var backPhrases = []string{
	"back to ", "more on ", "more context", "that issue", "that bug", "that task",
	"that fix", "that change", "that one", "the same issue", "the earlier", "the previous",
	"returning to ", "as before",
}

// refersBack reports whether the opening line of a request refers to work
// already under way.
func refersBack(req string) bool {
	line, _, _ := strings.Cut(str.Clip(req, 160), "\n")
	line = strings.ToLower(line)
	for _, p := range backPhrases {
		if strings.Contains(line, p) {
			return true
		}
	}
	return false
}

// isFollowUp reports whether a request is a short follow-up that continues
// the current task: a slash command ("/review", or Claude Code's
// <command-name>/review</command-name>), at most four words, or at most
// eight words opening with a reply word ("yes", "go", "commit", "let's", ...).
func isFollowUp(text string) bool {
	text = strings.TrimSpace(text)
	if strings.Contains(text, "<command-name>/") {
		return true
	}
	f := strings.Fields(text)
	if len(f) == 0 {
		return false
	}
	n := wordCount(f)
	if slash(f[0]) && n <= 8 {
		return true
	}
	if n <= 4 {
		return true
	}
	first := strings.ToLower(strings.TrimRight(f[0], ",.!:;"))
	return n <= 8 && followWords[first]
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

// injections are how harnesses open the user messages they write
// themselves in the middle of the agent's work: Claude Code's notice of a
// loaded tool and the text of a skill it launched.
var injections = []string{"Tool loaded.", "Base directory for this skill:"}

// injected reports whether a request is a harness's own message.
func injected(text string) bool {
	text = strings.TrimSpace(str.Clip(text, 64))
	for _, p := range injections {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}
