package memory

import (
	"context"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rcm-dev/rcm/internal/str"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
)

// Bounds of what Observe keeps, so that a record grows by a bounded amount
// per turn and stays small whatever the session does.
const (
	maxRequirement = 32 << 10 // bytes of one request; longer ones are cut with a note
	maxFiles       = 200      // entries of FilesRead and of FilesChanged
	maxCommands    = 30       // newest commands kept
	maxCommand     = 300      // bytes of one command as recorded
	maxClosings    = 12       // newest closing texts kept in Progress
	maxClosing     = 400      // bytes of one closing text
	maxTodos       = 40       // items taken from one todo list
	maxTodo        = 200      // bytes of one todo item
	outputWindow   = 4 << 10  // bytes at each end of a tool output searched for exit codes and test results
)

// maxRequirements bounds a task's requirement list: past it, those after
// the first keepFirst are cut (Record.Omitted counts them), so that the
// task's opening requests and its latest ones stay.
const (
	maxRequirements = 16
	keepFirst       = 4
)

// Observation is what one model call showed about a task: the request as
// parsed, which of its turns belong to the task, and the upstream answer.
type Observation struct {
	Transcript *transcript.Transcript
	// Turns are the indexes of the transcript turns labelled with the
	// task, ascending; the last one is the turn the call is about.
	Turns []int
	// Response is the upstream answer as the client received it: an SSE
	// stream of chat.completion.chunk objects or one JSON object, possibly
	// cut short.
	Response []byte
	SSE      bool
	Status   int // HTTP status of the answer; 0 when unknown
	// Context, when set, stops the reading of turns once it is done: the
	// record keeps what was read, and the turns left (their requests not
	// yet among the Requirements) are read by a later call.
	Context context.Context
}

// Observe updates r with what o shows. It is deterministic and idempotent:
// observing the same call again leaves r as it is. It reads only the turns
// it has not read before (those whose request is not yet among the
// Requirements), the turn it read last (tool results may have come since)
// and the last turn of o.Turns, the call's own, together with the answer
// when that turn is the transcript's current one; a turn read again
// replaces what it added last time (see Cursor). Side calls
// (title, compaction) are ignored. Bad input is skipped, never a panic.
//
// What it extracts:
//   - Requirements: the opening text of each Request turn, verbatim, in
//     order; a request that reads as an amendment (see amends) is marked.
//   - Workspace, once known: see workspace.
//   - FilesRead, FilesChanged: from read, edit, write, multiedit, patch and
//     apply_patch calls and from bash commands (see bashEffects); sorted,
//     unique, at most maxFiles each (later ones are not added); a changed
//     file is not also listed as read.
//   - Commands: bash calls, paired with their result by tool-call id within
//     the turn, with the exit status the result shows (else nil).
//   - LastTest: the last command that runs tests, with its outcome.
//   - Unfinished and Progress: the latest todowrite list (items not
//     completed or cancelled are unfinished; completed ones are progress),
//     then the closing text of each turn (its last assistant text).
func (r *Record) Observe(o Observation) {
	tr := o.Transcript
	if tr == nil || tr.Kind.Side() || len(o.Turns) == 0 {
		return
	}
	cur := o.Turns[len(o.Turns)-1]
	if cur < 0 || cur >= len(tr.Turns) {
		return
	}
	var reply *transcript.Message
	if cur == len(tr.Turns)-1 && (o.Status == 0 || o.Status/100 == 2) && len(o.Response) > 0 {
		if m, ok := tr.Format.ParseReply(o.Response, o.SSE); ok {
			reply = &m
		}
	}
	known := make(map[string]bool, len(r.Requirements))
	for _, q := range r.Requirements {
		known[q.Turn] = true
	}
	fps := tr.Fingerprints()
	if r.Omitted > 0 {
		r.knowOmitted(o.Turns, fps, known)
	}
	var seen seenFiles
	prev := -1
	for n, ti := range o.Turns {
		if o.Context != nil && n%256 == 255 && o.Context.Err() != nil {
			break
		}
		if ti <= prev || ti < 0 || ti >= len(tr.Turns) {
			continue
		}
		prev = ti
		turn := tr.Turns[ti]
		fp := fps[ti].String()
		// The turn read last is read again even when it is no longer the
		// current one: results of its last tool calls may have come since.
		if ti != cur && fp != r.Observed.Turn && (known[fp] || turn.Kind != transcript.Request) {
			continue
		}
		if turn.Kind == transcript.Request && !known[fp] {
			r.addRequirement(turn.Request(tr).Text(), fp)
			known[fp] = true
		}
		msgs := tr.Messages[turn.Start+1 : turn.End]
		if ti == cur && reply != nil {
			msgs = append(msgs[:len(msgs):len(msgs)], *reply)
		}
		r.readTurn(fp, msgs, &seen)
	}
	if r.Workspace == "" {
		r.Workspace = seen.workspace()
	}
	resolve := func(ps []string) []string {
		for i, p := range ps {
			ps[i] = r.resolve(p)
		}
		return ps
	}
	r.FilesChanged = mergeFiles(r.FilesChanged, resolve(seen.changed))
	r.FilesRead = mergeFiles(r.FilesRead, resolve(seen.read))
	r.FilesRead = slices.DeleteFunc(r.FilesRead, func(f string) bool {
		_, found := slices.BinarySearch(r.FilesChanged, f)
		return found
	})
	if len(r.FilesRead) == 0 {
		r.FilesRead = nil // as a stored record decodes
	}
}

// amendPrefixes and amendPhrases mark a request that changes an earlier
// one of its task; matched on the lower-cased, trimmed text. Prefixes catch
// openers ("Also, ...", "No, ...") that would be too common mid-sentence.
var (
	amendPrefixes = []string{"actually", "instead", "also", "change of plan", "update:", "correction", "no,", "no.", "no ", "wait", "scratch that", "on second thought"}
	amendPhrases  = []string{"actually,", "instead of", "instead,", "change of plan", "correction:", "update:", "on second thought", "scratch that", "rather than"}
)

// amends reports whether a request reads as an amendment of an earlier one.
func amends(text string) bool {
	t := strings.ToLower(strings.TrimSpace(text))
	for _, p := range amendPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	for _, p := range amendPhrases {
		if strings.Contains(t, p) {
			return true
		}
	}
	return false
}

func (r *Record) addRequirement(text, fp string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	if len(text) > maxRequirement {
		text = clip(text, maxRequirement) + " [... " + strconv.Itoa(len(text)-maxRequirement) + " bytes cut by rcm]"
	}
	r.Requirements = append(r.Requirements, Requirement{
		Text: text, Turn: fp, Amends: len(r.Requirements) > 0 && amends(text),
	})
	if over := len(r.Requirements) - maxRequirements; over > 0 {
		r.Requirements = slices.Delete(r.Requirements, keepFirst, keepFirst+over)
		r.Omitted += over
	}
}

// knowOmitted marks as known the request turns whose requirements were cut:
// those of the task before its latest known one (requirements follow the
// transcript's order, and the latest are never cut).
func (r *Record) knowOmitted(turns []int, fps []transcript.Fingerprint, known map[string]bool) {
	last := -1
	for i, ti := range turns {
		if ti >= 0 && ti < len(fps) && known[fps[ti].String()] {
			last = i
		}
	}
	for _, ti := range turns[:last+1] {
		if ti >= 0 && ti < len(fps) {
			known[fps[ti].String()] = true
		}
	}
}

// omittedNote is the line Render puts where requirements were cut.
func (r *Record) omittedNote(reqs []string) []string {
	if r.Omitted == 0 || len(reqs) < keepFirst {
		return reqs
	}
	note := "… " + strconv.Itoa(r.Omitted) + " requirements omitted by rcm …"
	return slices.Insert(reqs, keepFirst, note)
}

// call is a tool call of a turn and its result, when the turn holds one:
// a result message (chat, Responses) or a result block (Anthropic), read
// only when needed (see windows): a long turn is read again on each of its
// calls, and only its newest commands keep their exit status.
type call struct {
	transcript.ToolCall
	msg   *transcript.Message
	block *transcript.ToolResult
	read  []string // windows of the result, once read
}

func (c *call) hasResult() bool { return c.msg != nil || c.block != nil }

// result returns the windows of the result's text, decoding only the ends
// of a long tool result message; nil without a result.
func (c *call) result() []string {
	switch {
	case c.read != nil:
	case c.block != nil:
		c.read = windows(c.block.Text())
	case c.msg != nil:
		if first, last, n, ok := c.msg.TextEnds(outputWindow, outputWindow); ok && n > 2*outputWindow {
			c.read = []string{last, first}
		} else {
			c.read = windows(c.msg.Text())
		}
	}
	return c.read
}

// readTurn folds the messages of one turn (after its opening request) into
// r. When the turn is the one read last, what it added then is taken back
// first.
func (r *Record) readTurn(fp string, msgs []transcript.Message, seen *seenFiles) {
	if r.Observed.Turn == fp {
		n := min(r.Observed.Commands, len(r.Commands))
		r.Commands = r.Commands[:len(r.Commands)-n]
		if r.Observed.Closing && len(r.Progress) > r.Observed.Done {
			r.Progress = r.Progress[:len(r.Progress)-1]
		}
	}
	var (
		calls   []*call
		pending = map[string]*call{} // tool-call id -> its call, this turn only
		closing string
	)
	for mi := range msgs {
		m := &msgs[mi]
		switch m.Role {
		case "assistant":
			if t := strings.TrimSpace(m.Text()); t != "" {
				closing = t
			}
			for _, tc := range m.ToolCalls {
				c := &call{ToolCall: tc}
				pending[tc.ID] = c
				calls = append(calls, c)
			}
		case "tool":
			if c, ok := pending[m.ToolCallID]; ok {
				c.msg = m
				delete(pending, m.ToolCallID)
			}
		}
		// Anthropic's results are blocks of a user message.
		for ri := range m.Results {
			if c, ok := pending[m.Results[ri].ID]; ok {
				c.block = &m.Results[ri]
				delete(pending, c.block.ID)
			}
		}
	}
	// The exit status of a command and the outcome of the turn's last test
	// search the output: they are read after the loop, only for the
	// commands that stay among the newest maxCommands.
	var (
		ran  []*call // the call of each command added, in order
		test *call
		last Command // the test's command
	)
	for _, c := range calls {
		args := c.Arguments
		command := func(cmd, dir string) {
			if strings.TrimSpace(cmd) == "" {
				return
			}
			seen.workdir(dir)
			if dir == "" {
				dir = r.Workspace
			}
			e := bashEffects(cmd, dir)
			seen.cds = append(seen.cds, e.dirs...)
			seen.read, seen.changed = append(seen.read, e.read...), append(seen.changed, e.changed...)
			rec := Command{Cmd: oneLine(cmd, maxCommand)}
			r.Commands = append(r.Commands, rec)
			ran = append(ran, c)
			if isTest(cmd) {
				test, last = c, rec
			}
		}
		switch name := strings.ToLower(c.Name); name {
		case "bash", "shell", "shell_command":
			command(gjson.Get(args, "command").String(), gjson.Get(args, "workdir").String())
		case "exec_command": // Codex's classic tools
			command(gjson.Get(args, "cmd").String(), gjson.Get(args, "workdir").String())
		case "exec": // Codex's code mode: JavaScript calling tools.exec_command
			for _, m := range jsExec.FindAllStringSubmatch(args, maxCommands) {
				command(gjson.Parse(m[1]).Str, gjson.Parse(m[2]).Str)
			}
		case "read", "view":
			seen.read = append(seen.read, filePath(args))
		case "edit", "multiedit", "write":
			seen.changed = append(seen.changed, filePath(args))
		case "str_replace_editor", "str_replace_based_edit_tool":
			if gjson.Get(args, "command").String() == "view" {
				seen.read = append(seen.read, filePath(args))
			} else {
				seen.changed = append(seen.changed, filePath(args))
			}
		case "patch", "apply_patch":
			text := gjson.Get(args, "patchText").String()
			if !strings.HasPrefix(strings.TrimSpace(args), "{") {
				text = args // Codex's freeform apply_patch: the patch itself
			} else if text == "" {
				text = gjson.Get(args, "patch").String() + gjson.Get(args, "input").String()
			}
			seen.changed = append(seen.changed, diffFiles(text)...)
		case "todowrite":
			r.setTodos(gjson.Get(args, "todos"))
		}
	}
	if over := len(r.Commands) - maxCommands; over > 0 {
		r.Commands = slices.Delete(r.Commands, 0, over)
	}
	kept := min(len(ran), len(r.Commands))
	for i, c := range ran[len(ran)-kept:] {
		if c.hasResult() {
			r.Commands[len(r.Commands)-kept+i].Exit = exitStatus(c.result())
		}
	}
	if test != nil {
		end := "" // the end of the output, the whole of a short one
		if test.hasResult() {
			end = test.result()[0]
			last.Exit = exitStatus(test.result())
		}
		r.LastTest = &TestRun{Command: last, Outcome: testOutcome(end, last.Exit, test.hasResult())}
	}
	r.Observed.Turn, r.Observed.Commands, r.Observed.Closing = fp, kept, closing != ""
	if closing != "" {
		r.Progress = append(r.Progress, clip(closing, maxClosing))
		if over := len(r.Progress) - r.Observed.Done - maxClosings; over > 0 {
			r.Progress = slices.Delete(r.Progress, r.Observed.Done, r.Observed.Done+over)
		}
	}
}

// jsExec finds the commands of Codex's code-mode exec calls
// (`await tools.exec_command({cmd: "...", workdir: "..."})`): the cmd
// string and, when given right after it, the workdir, as JSON strings.
var jsExec = regexp.MustCompile(`exec_command\(\s*\{\s*cmd:\s*("(?:[^"\\]|\\.)*")(?:\s*,\s*workdir:\s*("(?:[^"\\]|\\.)*"))?`)

// filePath reads the file argument of a file tool, whatever its harness
// calls it.
func filePath(args string) string {
	for _, k := range []string{"filePath", "file_path", "path"} {
		if v := gjson.Get(args, k); v.Type == gjson.String {
			return v.Str
		}
	}
	return ""
}

// resolve cleans p and makes a relative one absolute against the
// workspace when it is known.
func (r *Record) resolve(p string) string {
	if !usablePath(p) {
		return ""
	}
	if !path.IsAbs(p) && r.Workspace != "" {
		p = path.Join(r.Workspace, p)
	}
	return path.Clean(p)
}

// mergeFiles adds files to the sorted set have, up to maxFiles entries.
func mergeFiles(have, files []string) []string {
	for _, f := range files {
		if f == "" {
			continue
		}
		i, found := slices.BinarySearch(have, f)
		if found || len(have) >= maxFiles {
			continue
		}
		have = slices.Insert(have, i, f)
	}
	return have
}

// setTodos replaces the todo-derived state with an OpenCode todowrite list
// ({content, status, priority, id}): items neither completed nor cancelled
// are Unfinished, completed ones lead Progress as "done: ...".
func (r *Record) setTodos(todos gjson.Result) {
	if !todos.IsArray() {
		return
	}
	var done, open []string
	todos.ForEach(func(_, t gjson.Result) bool {
		content := strings.TrimSpace(t.Get("content").String())
		if content == "" {
			return true
		}
		content = oneLine(content, maxTodo)
		switch status := t.Get("status").String(); status {
		case "completed":
			done = append(done, "done: "+content)
		case "cancelled":
		case "in_progress":
			open = append(open, content+" (in progress)")
		default:
			open = append(open, content)
		}
		return len(done)+len(open) < maxTodos
	})
	n := min(r.Observed.Done, len(r.Progress))
	r.Progress = append(done, r.Progress[n:]...)
	r.Observed.Done = len(done)
	r.Unfinished = open
}

// clip cuts s to at most n bytes on a rune boundary (str.Clip), marking the
// cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return str.Clip(s, n) + "…"
}

// oneLine shortens a multi-line text (a command with a here-document, a
// script) to its first line and a count of the lines left out, within n
// bytes.
func oneLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " … (" + strconv.Itoa(strings.Count(s[i:], "\n")) + " more lines)"
	}
	return clip(s, n)
}

// exitPatterns find an exit status in a tool output; each runs only when
// the output holds one of its needles (a cheap test that spares the regexp
// engine nearly every output). A word pattern matches at the start of a
// word, in the output lowered: a regexp that begins with a literal is
// searched for that literal first, where (?i) and \b would make the engine
// try every position (ten times slower on a 4 KB output).
var exitPatterns = []struct {
	needles []string
	re      *regexp.Regexp
	word    bool
}{
	{[]string{"</returncode>"}, regexp.MustCompile(`<returncode>\s*(-?\d+)\s*</returncode>`), false}, // mini-swe-agent
	{[]string{"xit", "XIT"}, regexp.MustCompile(`exit(?:ed with)? (?:code|status):? ?(-?\d+)\b`), true},
	{[]string{`"exit_code"`}, regexp.MustCompile(`"exit_code":\s*(-?\d+)`), false}, // Codex's code-mode exec_command result
}

// exitStatus returns the exit status a tool output shows (its last one),
// searching the start and the end of the output only (its windows); nil
// when it shows none.
func exitStatus(parts []string) *int {
	for _, part := range parts {
		for _, p := range exitPatterns {
			if !slices.ContainsFunc(p.needles, func(n string) bool { return strings.Contains(part, n) }) {
				continue
			}
			text := part
			if p.word {
				text = strings.ToLower(part)
			}
			ms := p.re.FindAllStringSubmatchIndex(text, -1)
			ms = slices.DeleteFunc(ms, func(m []int) bool { return p.word && m[0] > 0 && str.WordByte(text[m[0]-1]) })
			if len(ms) == 0 {
				continue
			}
			last := ms[len(ms)-1]
			if n, err := strconv.Atoi(text[last[2]:last[3]]); err == nil {
				return &n
			}
		}
	}
	return nil
}

// windows returns the end and the start of s, outputWindow bytes each (s
// itself when short).
func windows(s string) []string {
	if len(s) <= 2*outputWindow {
		return []string{s}
	}
	return []string{s[len(s)-outputWindow:], s[:outputWindow]}
}

// testRunners are commands that run a test suite by their name alone.
var testRunners = []string{"pytest", "py.test", "tox", "nox", "ctest", "rspec", "jest", "vitest", "phpunit", "runtests.py", "runtests"}

// isTest reports whether a command line runs tests: a test runner, a
// python -m pytest/unittest, a runtests.py or manage.py test, go/cargo/npm
// test, make test or check, bin/test and the like, as one of its simple
// commands (so "grep pytest setup.cfg" is not one).
func isTest(cmd string) bool {
	for _, s := range lexShell(cmd) {
		w := commandWords(s.args)
		if len(w) == 0 {
			continue
		}
		name, sub := path.Base(w[0]), ""
		if len(w) > 1 {
			sub = w[1]
		}
		switch {
		case slices.Contains(testRunners, name), strings.HasSuffix(w[0], "bin/test"):
			return true
		case strings.HasPrefix(name, "python"):
			args := strings.Join(w[1:], " ")
			if strings.Contains(args, "-m pytest") || strings.Contains(args, "-m unittest") ||
				strings.Contains(args, "-m tox") || strings.Contains(args, "manage.py test") ||
				strings.HasPrefix(path.Base(sub), "runtests") {
				return true
			}
		case name == "go" || name == "cargo" || name == "mvn" || name == "gradle" || name == "gradlew" || name == "dotnet":
			return sub == "test"
		case name == "npm" || name == "yarn" || name == "pnpm" || name == "bun":
			return sub == "test" || sub == "run" && len(w) > 2 && strings.HasPrefix(w[2], "test")
		case name == "make":
			return sub == "test" || sub == "check"
		}
	}
	return false
}

var (
	pytestSummary  = regexp.MustCompile(`(?m)^=+ (.*\b(?:passed|failed|errors?|no tests ran)\b.*?) in [\d.]+s.*=+\s*$`)
	unittestRan    = regexp.MustCompile(`(?m)^Ran (\d+) tests? in`)
	unittestResult = regexp.MustCompile(`(?m)^(OK|FAILED)\b(.*)$`)
	goTestResult   = regexp.MustCompile(`(?m)^(ok|FAIL)\s`)
)

// testOutcome words the outcome of a test command: "passed" or "failed",
// with the runner's summary when the output has one (pytest, unittest and
// Django's runtests.py, go test), else from the exit status; "no result
// yet" while the command has no result and "unknown" when nothing tells.
func testOutcome(out string, exit *int, hasResult bool) string {
	if !hasResult {
		return "no result yet"
	}
	tail := out
	if len(tail) > outputWindow {
		tail = tail[len(tail)-outputWindow:]
	}
	if ms := pytestSummary.FindAllStringSubmatch(tail, -1); len(ms) > 0 {
		s := ms[len(ms)-1][1]
		if strings.Contains(s, "failed") || strings.Contains(s, "error") || strings.Contains(s, "no tests ran") {
			return "failed (" + s + ")"
		}
		return "passed (" + s + ")"
	}
	if ms := unittestResult.FindAllStringSubmatch(tail, -1); len(ms) > 0 {
		m := ms[len(ms)-1]
		detail := strings.TrimSpace(m[2])
		if ran := unittestRan.FindAllStringSubmatch(tail, -1); len(ran) > 0 {
			detail = strings.TrimSpace("ran " + ran[len(ran)-1][1] + " " + detail)
		}
		if m[1] == "OK" {
			return strings.TrimSpace("passed (" + detail + ")")
		}
		return "failed (" + detail + ")"
	}
	if ms := goTestResult.FindAllStringSubmatch(tail, -1); len(ms) > 0 {
		if strings.Contains(tail, "\nFAIL") || strings.HasPrefix(tail, "FAIL") {
			return "failed"
		}
		return "passed"
	}
	switch {
	case exit == nil:
		return "unknown"
	case *exit == 0:
		return "passed"
	}
	return "failed (exit " + strconv.Itoa(*exit) + ")"
}

// seenFiles collects what the turns read show of files and directories;
// relative paths from tool arguments are resolved once the workspace is
// known.
type seenFiles struct {
	workdirs      []string // bash workdir arguments
	cds           []string // directories bash commands cd into
	read, changed []string
}

func (h *seenFiles) workdir(d string) {
	if path.IsAbs(d) {
		h.workdirs = append(h.workdirs, path.Clean(d))
	}
}

// wsRoot matches a bench checkout root such as /work/ws3.
var wsRoot = regexp.MustCompile(`^(/(?:[^/]+/)*?ws\d+)(?:/|$)`)

// workspace picks the checkout the task works in: a bench-style root
// (.../wsN) that any path lies in, else the most used bash workdir, else
// the deepest directory common to the directories cd'd into, else to the
// absolute files touched; "" when none tells.
func (h *seenFiles) workspace() string {
	files := slices.Concat(h.read, h.changed)
	all := slices.Concat(h.workdirs, h.cds, files)
	var roots []string
	for _, p := range all {
		if m := wsRoot.FindStringSubmatch(p); m != nil {
			roots = append(roots, m[1])
		}
	}
	if w := mostCommon(roots); w != "" {
		return w
	}
	if w := mostCommon(h.workdirs); w != "" {
		return w
	}
	if w := commonDir(h.cds, false); w != "" {
		return w
	}
	return commonDir(files, true)
}

// mostCommon returns the most frequent string, the earliest on ties.
func mostCommon(ss []string) string {
	best, bestN := "", 0
	counts := map[string]int{}
	for _, s := range ss {
		counts[s]++
		if n := counts[s]; n > bestN {
			best, bestN = s, n
		}
	}
	return best
}

// commonDir returns the deepest directory holding every absolute path
// (the paths themselves are directories unless files is set); "" when it
// would be the root or none is absolute.
func commonDir(paths []string, files bool) string {
	dir := ""
	for _, p := range paths {
		if !path.IsAbs(p) {
			continue
		}
		if files {
			p = path.Dir(p)
		}
		if dir == "" {
			dir = p
			continue
		}
		for dir != "/" && p != dir && !strings.HasPrefix(p, dir+"/") {
			dir = path.Dir(dir)
		}
	}
	if dir == "/" {
		return ""
	}
	return dir
}
