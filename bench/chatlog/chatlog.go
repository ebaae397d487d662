package chatlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/rcm-dev/rcm/bench/trajectory"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/tidwall/gjson"
)

// Formats of the logs Read understands.
const (
	FormatAider      = "aider"
	FormatSpecStory  = "specstory"
	FormatClaudeCode = "claude-code"
	FormatCodex      = "codex"
)

var formats = []string{FormatAider, FormatSpecStory, FormatClaudeCode, FormatCodex}

// Session is one real session log laid out as the turns a harness would
// have sent.
type Session struct {
	Name   string // the log's base name without extension ("011"; "011.2" for its conversation after a /clear)
	Path   string // the log file (names repeat across folders: .aider.chat.history)
	Format string // FormatAider, FormatSpecStory, FormatClaudeCode or FormatCodex
	// Workdir is where the harness runs: the log's own cwd when it has
	// one, else the folder its own absolute paths share (ownWorkdir),
	// else "/home/user/" + the repository's name (from the label's
	// source.repo, else "project").
	Workdir string
	// Turns holds one turn per user message, in order. Request is the
	// message as the format's parsing rules define it (see the package
	// doc); Messages the assistant's work as OpenCode would send it.
	Turns []chat.Turn
	// Labels holds one label per turn when a label file was found, else
	// nil.
	Labels []Label
	Repo   string // the label's source.repo; "" without labels
}

// Label is what a person judged one turn to be (testdata/real-sessions'
// README): its task (T1, T2, ... in order of first appearance), its kind
// (new, continue, return or meta), the earlier tasks whose conversation it
// needs, and why.
type Label struct {
	Task  string   `json:"task"`
	Kind  string   `json:"kind"`
	Needs []string `json:"needs"`
	Note  string   `json:"note"`
}

// Label kinds.
const (
	KindNew      = "new"
	KindContinue = "continue"
	KindReturn   = "return"
	KindMeta     = "meta"
)

// labelFile is a labels/NNN.json file.
type labelFile struct {
	Source struct {
		Repo   string `json:"repo"`
		Format string `json:"format"`
	} `json:"source"`
	Turns []struct {
		Prefix string `json:"user_prefix"`
		Label
	} `json:"turns"`
}

// prefixLen is how many characters of a trimmed message a label quotes.
const prefixLen = 60

// Prefix is the part of a request a label quotes: its first 60 characters
// after leading and trailing white space are removed.
func Prefix(request string) string {
	r := []rune(strings.TrimSpace(request))
	return string(r[:min(len(r), prefixLen)])
}

// quotes tells whether a label's user_prefix quotes request. White space
// is compared as runs, not characters: a labeller that read a CRLF file
// with universal newlines (Python's default), or kept aider's two
// trailing spaces, counts other characters than this parse, so its 60
// characters end elsewhere. A prefix shorter than 60 characters is the
// whole message and must equal it.
func quotes(prefix, request string) bool {
	p, r := strings.Fields(prefix), strings.Fields(request)
	if len(p) > len(r) {
		return false
	}
	if utf8.RuneCountInString(prefix) < prefixLen {
		return slices.Equal(p, r)
	}
	// The prefix's last word may be cut short.
	last := len(p) - 1
	return last < 0 || slices.Equal(p[:last], r[:last]) && strings.HasPrefix(r[last], p[last])
}

// Read reads a log file, or every log under a directory: a corpus
// directory (raw/ beside labels/, as testdata/real-sessions), a directory
// of logs, a project's .specstory/history, a ~/.claude/projects or a
// ~/.codex/sessions directory. A log's labels are looked up beside it: LABELS/NAME.json
// where LABELS is labels/ in the log's directory or in its parent, or
// NAME.json in the log's directory. Sessions come sorted by path.
//
// What Read cannot take is left out and returned as skips, so that one
// odd file does not stop a replay of the others: a log it cannot read or
// parse (Record "log"), one whose label file's number of turns or
// prefixes disagree with the parsed messages (Record "labels", the reason
// naming the session and turn), a JSONL log's lines that are not JSON
// (Record "line N"; the rest of that log is read), and what the Claude
// Code and Codex readers left out or repaired in a log they read (an
// entry they could not place, tool calls closed with a placeholder
// result: trajectory's records). Read fails when p
// cannot be listed or no session is left; callers that must have every
// log (a fit) treat a skip as an error.
func Read(p string) ([]Session, []trajectory.Skip, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, nil, fmt.Errorf("chatlog: %w", err)
	}
	files := []string{p}
	if info.IsDir() {
		if files, err = logFiles(p); err != nil {
			return nil, nil, fmt.Errorf("chatlog: %w", err)
		}
	}
	var out []Session
	var skips []trajectory.Skip
	empty := 0 // logs read whole that hold no request
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			skips = append(skips, trajectory.Skip{Source: f, Record: "log", Reason: err.Error()})
			continue
		}
		if detect(f, b) == "" {
			continue // a README, notes
		}
		ss, sk, err := readFile(f, b)
		skips = append(skips, sk...)
		if err != nil {
			var le labelError
			record := "log"
			if errors.As(err, &le) {
				record = "labels"
			}
			skips = append(skips, trajectory.Skip{Source: f, Record: record, Reason: err.Error()})
			continue
		}
		if len(ss) == 0 {
			empty++
		}
		out = append(out, ss...)
	}
	if len(out) == 0 {
		if len(skips) > 0 {
			return nil, skips, fmt.Errorf("chatlog: %s: no session left: %s", p, skips[0])
		}
		if empty > 0 {
			return nil, nil, fmt.Errorf("chatlog: %s: not one request in the %d log(s) read (a subagent's log, a session left at once)", p, empty)
		}
		return nil, nil, fmt.Errorf("chatlog: %s: no aider, SpecStory, Claude Code or Codex log", p)
	}
	return out, skips, nil
}

// labelError is a label file that cannot be read or disagrees with its
// log.
type labelError struct{ err error }

func (e labelError) Error() string { return e.err.Error() }
func (e labelError) Unwrap() error { return e.err }

// logFiles lists the .md and .jsonl files under dir, but in labels/.
func logFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(f string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "labels":
			return filepath.SkipDir
		case !d.IsDir() && (filepath.Ext(f) == ".md" || filepath.Ext(f) == ".jsonl"):
			files = append(files, f)
		}
		return nil
	})
	return files, err
}

// codexLine opens a Codex rollout: its first line is the session's meta,
// or before September 2025 a bare {"id", "timestamp", ...} (a Claude Code
// line opens with another member).
var codexLine = regexp.MustCompile(`^\s*\{(?:[^\n]*"type"\s*:\s*"session_meta"|\s*"id"\s*:\s*"[^"\n]*"\s*,\s*"timestamp"\s*:)`)

// aiderHeader is aider's session start line; aiderLine a user line.
var (
	aiderHeader = regexp.MustCompile(`(?m)^` + aiderStart)
	aiderLine   = regexp.MustCompile(`(?m)^#### .*  \r?$`)
)

// detect names the format of a log from its name and content, "" when it
// is none Read knows.
func detect(name string, b []byte) string {
	switch {
	case filepath.Ext(name) == ".jsonl" && codexLine.Match(b):
		return FormatCodex
	case filepath.Ext(name) == ".jsonl":
		return FormatClaudeCode
	case aiderHeader.Match(b), strings.HasSuffix(name, "aider.chat.history.md") && aiderLine.Match(b):
		// A history copied from its middle has no header.
		return FormatAider
	case specUser.Match(b):
		return FormatSpecStory
	}
	return ""
}

// readFile reads one log and its labels; an unlabelled JSONL log without
// a request is no session. An aider file holding several sessions (one per "# aider
// chat started at" line) and no labels is one Session per session with a
// message, named NAME-1, NAME-2, ... by its place in the file; each
// conversation a /clear or /reset starts in one is a Session of its own
// (aiderCleared), NAME.2, NAME.3, ..., its labels rebased (restarted).
func readFile(f string, b []byte) ([]Session, []trajectory.Skip, error) {
	name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
	labels, err := readLabels(f, name)
	if err != nil {
		return nil, nil, labelError{err}
	}
	// The label's format wins where it names one of ours; another name
	// ("cursor", a labeller's own) says nothing this parse can use.
	format := detect(f, b)
	if labels != nil && slices.Contains(formats, labels.Source.Format) {
		format = labels.Source.Format
	}
	text := string(b)
	var ss []Session
	var skips []trajectory.Skip
	switch format {
	case FormatAider:
		parts := []string{text}
		if labels == nil {
			parts = aiderSessions(text)
		}
		for i, part := range parts {
			base := name
			if len(parts) > 1 {
				base = fmt.Sprintf("%s-%d", name, i+1)
			}
			w, _ := parsed(part, workdir(labels), parseAider) // where the whole session ran
			for k, conv := range aiderCleared(part) {
				s := Session{Name: base, Path: f, Format: format, Workdir: w, Turns: parseAider(conv, w)}
				if k > 0 {
					s.Name = fmt.Sprintf("%s.%d", base, k+1)
				}
				if len(s.Turns) > 0 || labels != nil {
					ss = append(ss, s) // not a session opened and left at once
				}
			}
		}
	case FormatSpecStory:
		s := Session{Name: name, Path: f, Format: format}
		s.Workdir, s.Turns = parsed(text, workdir(labels), parseSpecStory)
		ss = append(ss, s)
	case FormatClaudeCode, FormatCodex:
		read := trajectory.ReadClaudeCodeLog
		if format == FormatCodex {
			read = trajectory.ReadCodexLog
		}
		tr, sk, err := read(b, f, name)
		if errors.Is(err, trajectory.ErrNoRequest) && labels == nil {
			return nil, nil, nil // a subagent's log, an empty session
		}
		if err != nil {
			return nil, nil, fmt.Errorf("chatlog: %w", err)
		}
		skips = sk
		s := Session{Name: name, Path: f, Format: format, Workdir: tr.Workdir, Turns: tr.Turns}
		if s.Workdir == "" {
			s.Workdir = workdir(labels)
		}
		ss = append(ss, s)
	default:
		return nil, nil, fmt.Errorf("chatlog: %s: format %q: want aider, specstory, claude-code or codex", f, format)
	}
	if labels == nil {
		return ss, skips, nil
	}
	total := 0
	for _, s := range ss {
		total += len(s.Turns)
	}
	if len(labels.Turns) != total {
		return nil, nil, labelError{fmt.Errorf("chatlog: session %s: %d user messages parsed, %d labelled", name, total, len(labels.Turns))}
	}
	i := 0
	for k := range ss {
		s := &ss[k]
		s.Repo = labels.Source.Repo
		for _, turn := range s.Turns {
			t := labels.Turns[i]
			if !quotes(t.Prefix, turn.Request) {
				return nil, nil, labelError{fmt.Errorf("chatlog: session %s: turn %d: message begins %q, label's user_prefix %q", name, i+1, Prefix(turn.Request), t.Prefix)}
			}
			s.Labels = append(s.Labels, t.Label)
			i++
		}
		if k > 0 {
			s.Labels = restarted(s.Labels)
		}
	}
	return ss, skips, nil
}

// restarted rebases the labels of a conversation that an aider /clear
// opened (aiderCleared): the harness sent none of the turns before it, so
// a request of a task with no earlier request in it is new, and its needs
// name only tasks with one (no call could have shown the others). Meta
// turns keep the task they sat in.
func restarted(ls []Label) []Label {
	seen := map[string]bool{}
	for i, l := range ls {
		l.Needs = slices.DeleteFunc(slices.Clone(l.Needs), func(t string) bool { return !seen[t] })
		if l.Kind != KindMeta {
			if !seen[l.Task] {
				l.Kind = KindNew
			}
			seen[l.Task] = true
		}
		ls[i] = l
	}
	return ls
}

// readLabels returns the label file of the log f named name, nil when it
// has none.
func readLabels(f, name string) (*labelFile, error) {
	dir := filepath.Dir(f)
	for _, p := range []string{
		filepath.Join(dir, "labels", name+".json"),
		filepath.Join(filepath.Dir(dir), "labels", name+".json"),
		filepath.Join(dir, name+".json"),
	} {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("chatlog: %w", err)
		}
		var l labelFile
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("chatlog: %s: %w", p, err)
		}
		return &l, nil
	}
	return nil, nil
}

// workdir is where a session without a cwd of its own ran: the
// repository's name under /home/user.
func workdir(l *labelFile) string {
	name := "project"
	if l != nil && l.Source.Repo != "" {
		name = path.Base(l.Source.Repo)
	}
	return "/home/user/" + name
}

// parsed parses a markdown log with parse in the folder its own absolute
// paths name (ownWorkdir), else in def, and returns the folder and turns.
func parsed(text, def string, parse func(text, workdir string) []chat.Turn) (string, []chat.Turn) {
	turns := parse(text, def)
	if w := ownWorkdir(turns, def); w != "" {
		return w, parse(text, w)
	}
	return def, turns
}

// ownWorkdir is where a markdown log says it ran, when it names absolute
// paths of its own outside def (the folder assumed for it): the deepest
// folder holding all of them, if at least three levels deep (below a home
// folder: /Users/ana/shop, not /Users/ana), else "". Its relative names
// then sit where its absolute ones do, as its harness saw them. A path in
// a hidden folder counts as the folder that holds it: a checkout's
// .github, or the home of Cursor's ~/.cursor/projects/..., which is no
// checkout.
func ownWorkdir(turns []chat.Turn, def string) string {
	common := ""
	var abs, rel []string
	for _, t := range turns {
		for _, m := range t.Messages {
			for _, c := range m.ToolCalls {
				p := gjson.Get(c.Function.Arguments, "filePath").String()
				if r, ok := strings.CutPrefix(p, def+"/"); ok {
					rel = append(rel, r)
				}
				if p == "" || strings.HasPrefix(p, def+"/") {
					continue
				}
				abs = append(abs, p)
				dir := path.Dir(p)
				if i := strings.Index(p, "/."); i >= 0 {
					dir = p[:i] // the folder that holds the hidden one
				}
				if common == "" {
					common = dir
				}
				for common != "/" && dir != common && !strings.HasPrefix(dir, common+"/") {
					common = path.Dir(common)
				}
			}
		}
	}
	if strings.Count(common, "/") < 3 {
		return ""
	}
	return checkout(common, abs, rel)
}

// checkout is the folder a log's relative names are relative to, given
// the deepest folder its absolute paths share: the folder above it that
// an absolute path names a relative one under (exe/engine/device.py and
// /Users/ana/app/exe/engine/device.py place the log in /Users/ana/app),
// the one most names agree on; common itself when none does.
func checkout(common string, abs, rel []string) string {
	votes := map[string]int{}
	best := common
	for _, r := range rel {
		for _, a := range abs {
			root, ok := strings.CutSuffix(a, "/"+r)
			if !ok || strings.Count(root, "/") < 3 || !strings.HasPrefix(common+"/", root+"/") {
				continue
			}
			if votes[root]++; votes[root] > votes[best] || votes[root] == votes[best] && len(root) > len(best) {
				best = root
			}
		}
	}
	return best
}

// Lay lays the session out as its model calls, each the system prompt,
// the history so far (since the last compaction) and the recorded
// assistant message answering it, and the whole history they index (see
// chat.Lay: a turn with no answer makes one call with an empty Response).
func (s *Session) Lay(system string) chat.Layout {
	return chat.Lay(system, s.Turns)
}

// Tag writes into each labelled request of the given kinds the tag a
// person would have written to name its task ("[task: T2] " before it),
// so that a replay measures what naming tasks buys: KindNew tags only the
// new tasks that need no earlier one (a person names a task that stands
// apart), KindReturn every return. A session without labels is left as it
// is. It returns how many requests were tagged.
func (s *Session) Tag(kinds ...string) int {
	n := 0
	for i, l := range s.Labels {
		if !slices.Contains(kinds, l.Kind) || l.Kind == KindNew && len(l.Needs) > 0 || i >= len(s.Turns) {
			continue
		}
		s.Turns[i].Request = "[task: " + l.Task + "] " + s.Turns[i].Request
		n++
	}
	return n
}
