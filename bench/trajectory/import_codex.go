package trajectory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/transcript"
)

// codexItem is a response_item payload of a Codex rollout, or an event_msg
// one (Type "user_message", Message).
type codexItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Message   string          `json:"message"`
	Cwd       string          `json:"cwd"`
	// Replacement is a compacted line's replacement_history: the
	// history as Codex rebuilt it, in the versions that log it.
	Replacement json.RawMessage `json:"replacement_history"`
}

// ReadCodexLog converts a Codex CLI session log
// (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl: one {"type", "payload"}
// object per line) into a Trajectory. Each user_message event is a request
// and opens a turn (the response items that repeat it, and the harness's
// environment and instruction messages, are not requests). A rollout with
// no such event (Codex before September 2025 wrote none, and wrote each
// response item bare, after a {"id", "timestamp", "instructions"} line and
// among {"record_type": "state"} ones) has its requests in its user
// messages that are not the harness's (transcript.CodexContext), and its
// workdir in the <cwd> of its environment message. Assistant
// messages and the tool calls after them merge into one assistant message
// until a tool output: shell calls become bash with the command line,
// apply_patch one edit (or write, for an added file) per file with the
// patch's old and new lines, other tools keep their name and arguments;
// their outputs become role "tool" messages. Reasoning is dropped, as for
// Claude Code. A compacted line rebuilds the history where it stands
// (chat.Rebuild, codexRebuilt): Codex sends the rebuilt one from then on.
// Workdir is the session's cwd. Lines that are not JSON are reported and
// skipped.
func ReadCodexLog(b []byte, source, task string) (*chat.Trajectory, []Skip, error) {
	tr := &chat.Trajectory{Task: task, Format: "codex"}
	var skips []Skip
	var turn *chat.Turn
	var asst *chat.Message
	ids := map[string][]string{} // a call's id -> the ids of the calls it became
	var users []string           // the person's messages the history holds (codexRebuilt)
	cuts := map[int][]codexCut{} // per turn, its compactions
	events := codexEvents(b)
	log := newJSONL(b)
	for n, line := range log.lines() {
		e, err := codexLine(line)
		if err != nil {
			skips = append(skips, Skip{Source: source, Record: fmt.Sprintf("line %d", n), Reason: "not a rollout line: " + err.Error()})
			continue
		}
		p := e.Payload
		if tr.Workdir == "" && (e.Type == "session_meta" || e.Type == "turn_context") {
			tr.Workdir = p.Cwd
		}
		request, ok := "", false
		switch {
		case e.Type == "event_msg" && p.Type == "user_message":
			request, ok = p.Message, true
		case !events && e.Type == "response_item" && p.Type == "message" && p.Role == chat.RoleUser:
			text := codexText(p.Content)
			if tr.Workdir == "" && strings.HasPrefix(strings.TrimSpace(text), "<environment_context>") {
				if m := codexCwd.FindStringSubmatch(text); m != nil {
					tr.Workdir = strings.TrimSpace(m[1])
				}
			}
			request, ok = text, !transcript.CodexContext(text)
		}
		if ok {
			tr.Turns = append(tr.Turns, chat.Turn{Request: request})
			turn, asst = &tr.Turns[len(tr.Turns)-1], nil
			users = append(users, request)
			continue
		}
		if e.Type == "compacted" && turn != nil { // before any request there is no history to rebuild
			var hist []chat.Message
			hist, users = codexRebuilt(p, users)
			i := len(tr.Turns) - 1
			cuts[i] = append(cuts[i], codexCut{at: len(turn.Messages), history: hist})
			asst = nil
			continue
		}
		if e.Type != "response_item" || turn == nil {
			continue
		}
		open := func() *chat.Message {
			if asst == nil {
				turn.Messages = append(turn.Messages, chat.Message{Role: chat.RoleAssistant})
				asst = &turn.Messages[len(turn.Messages)-1]
			}
			return asst
		}
		switch p.Type {
		case "message":
			if p.Role == chat.RoleAssistant {
				m := open()
				m.Content = joinText(m.Content, codexText(p.Content))
			}
		case "function_call", "custom_tool_call":
			if p.Name == "" {
				skips = append(skips, Skip{Source: source, Record: fmt.Sprintf("line %d", n), Reason: "tool call without a name"})
				continue
			}
			m := open()
			for _, c := range codexCalls(p, tr.Workdir) {
				ids[p.CallID] = append(ids[p.CallID], c.ID)
				m.ToolCalls = append(m.ToolCalls, c)
			}
		case "function_call_output", "custom_tool_call_output":
			asst = nil
			out := codexOutput(p.Output)
			for _, id := range ids[p.CallID] {
				turn.Messages = append(turn.Messages, chat.Message{Role: chat.RoleTool, ToolCallID: id, Content: out})
			}
			delete(ids, p.CallID)
		}
	}
	if err := log.err(); err != nil {
		return nil, skips, fmt.Errorf("%s: %w", source, err)
	}
	if len(tr.Turns) == 0 {
		return nil, skips, fmt.Errorf("%s: %w", source, ErrNoRequest)
	}
	for i := range tr.Turns {
		// Each stretch between compactions is tidied on its own, so that
		// a rebuild stays where it was among the messages left.
		t := &tr.Turns[i]
		var out []chat.Message
		from := 0
		for _, c := range cuts[i] {
			seg, _ := closeCalls(dropEmptyAssistant(t.Messages[from:c.at]))
			out = append(out, seg...)
			t.Rebuilt = append(t.Rebuilt, chat.Rebuild{At: 1 + len(out), History: c.history})
			from = c.at
		}
		seg, _ := closeCalls(dropEmptyAssistant(t.Messages[from:]))
		t.Messages = append(out, seg...)
	}
	return tr, skips, nil
}

// codexItems are the payload types Codex wrote bare, one a line, before
// it wrapped them in {"type": "response_item", "payload": ...}.
var codexItems = map[string]bool{"message": true, "reasoning": true, "function_call": true, "function_call_output": true,
	"custom_tool_call": true, "custom_tool_call_output": true, "local_shell_call": true, "web_search_call": true}

// codexCwd is the working directory an environment message names.
var codexCwd = regexp.MustCompile(`<cwd>([^<]*)</cwd>`)

// codexEntry is a rollout line: its type and payload.
type codexEntry struct {
	Type    string    `json:"type"`
	Payload codexItem `json:"payload"`
}

// codexLine reads a rollout line; a bare response item is read as the
// response_item line that holds it. The header and state lines of a bare
// rollout are of no type, and so are passed over.
func codexLine(line []byte) (codexEntry, error) {
	var e codexEntry
	if err := json.Unmarshal(line, &e); err != nil {
		return e, err
	}
	if codexItems[e.Type] {
		var p codexItem
		if err := json.Unmarshal(line, &p); err != nil {
			return e, err
		}
		e = codexEntry{Type: "response_item", Payload: p}
	}
	return e, nil
}

// codexEvents reports whether a rollout has user_message events, which
// are then its requests.
func codexEvents(b []byte) bool {
	for _, line := range newJSONL(b).lines() {
		if !bytes.Contains(line, []byte(`"user_message"`)) {
			continue
		}
		if e, err := codexLine(line); err == nil && e.Type == "event_msg" && e.Payload.Type == "user_message" {
			return true
		}
	}
	return false
}

// codexCut is a compacted line within a turn: after the turn's first at
// messages, the history Codex rebuilt.
type codexCut struct {
	at      int
	history []chat.Message
}

// Codex's compaction (codex-rs core/src/compact.rs): the prefix it sends
// its summary with, and the budget of the person's messages it keeps.
const (
	codexSummaryPrefix = "Another language model started to solve this problem and produced a summary of its thinking process. You also have access to the state of the tools that were used by that language model. Use this to build on the work that has already been done and avoid duplicating work. Here is the summary produced by the other language model, use the information in this summary to  assist with your own analysis:"
	codexKeptTokens    = 20000 // COMPACT_USER_MESSAGE_MAX_TOKENS
	codexTokenBytes    = 4     // its approx_token_count: 4 bytes a token
)

// codexRebuilt is the history Codex sends after a compacted line, as it
// rebuilds it when it resumes a session: the line's replacement_history
// (its user and assistant messages) when it holds one; else the person's
// messages the history held (users), the newest that fit in Codex's budget
// (the oldest of them cut in the middle), then the summary, with Codex's
// prefix. It also returns the person's messages the rebuilt history holds.
func codexRebuilt(p codexItem, users []string) ([]chat.Message, []string) {
	var items []codexItem
	if json.Unmarshal(p.Replacement, &items) == nil && items != nil {
		var hist []chat.Message
		var kept []string
		for _, it := range items {
			text := codexText(it.Content)
			if it.Type != "message" || text == "" || it.Role != chat.RoleUser && it.Role != chat.RoleAssistant {
				continue
			}
			hist = append(hist, chat.Message{Role: it.Role, Content: text})
			if it.Role == chat.RoleUser && !strings.HasPrefix(text, codexSummaryPrefix) {
				kept = append(kept, text)
			}
		}
		return hist, kept
	}
	var kept []string
	left := codexKeptTokens
	for i := len(users) - 1; i >= 0 && left > 0; i-- {
		u := users[i]
		n := (len(u) + codexTokenBytes - 1) / codexTokenBytes
		if n > left {
			u = middleCut(u, left*codexTokenBytes, n-left)
		}
		kept = append(kept, u)
		left -= n
	}
	slices.Reverse(kept) // oldest first, as they were asked
	summary := p.Message
	switch {
	case summary == "":
		summary = "(no summary available)" // what Codex sends then
	case !strings.HasPrefix(summary, codexSummaryPrefix):
		summary = codexSummaryPrefix + "\n" + summary
	}
	hist := make([]chat.Message, 0, len(kept)+1)
	for _, u := range kept {
		hist = append(hist, chat.Message{Role: chat.RoleUser, Content: u})
	}
	return append(hist, chat.Message{Role: chat.RoleUser, Content: summary}), kept
}

// middleCut keeps the first and last of size bytes of s (on rune
// boundaries) around a note of the tokens left out, as Codex truncates.
func middleCut(s string, size, dropped int) string {
	if size >= len(s) {
		return s
	}
	head, tail := size/2, len(s)-size/2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return fmt.Sprintf("%s…%d tokens truncated…%s", s[:head], dropped, s[tail:])
}

// codexText joins the text parts of a message's content.
func codexText(raw json.RawMessage) string {
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		s, _ := contentText(raw)
		return s
	}
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// codexOutput is a tool output's text: a string (older versions wrap it as
// {"output": ..., "metadata": ...} inside the string), or content parts.
func codexOutput(raw json.RawMessage) string {
	s, err := contentText(raw)
	if err != nil {
		return codexText(raw)
	}
	var wrapped struct {
		Output *string `json:"output"`
	}
	if json.Unmarshal([]byte(s), &wrapped) == nil && wrapped.Output != nil {
		return *wrapped.Output
	}
	return s
}

// codexCalls maps one Codex tool call to OpenCode's: shell runs to bash,
// apply_patch to one call per file (ids suffixed past the first).
func codexCalls(p codexItem, workdir string) []chat.ToolCall {
	call := func(id, name string, args any) chat.ToolCall {
		a, _ := json.Marshal(args) // maps of strings and raw JSON
		return chat.ToolCall{ID: id, Type: "function", Function: chat.FunctionCall{Name: name, Arguments: string(a)}}
	}
	id := p.CallID
	if id == "" {
		id = "codex-call"
	}
	input := p.Input
	if p.Type == "function_call" {
		input = p.Arguments
	}
	if p.Name == "apply_patch" {
		var in struct {
			Input string `json:"input"`
		}
		if json.Unmarshal([]byte(input), &in) == nil && in.Input != "" {
			input = in.Input
		}
		var out []chat.ToolCall
		for i, e := range patchEdits(input) {
			cid := id
			if i > 0 {
				cid = fmt.Sprintf("%s#%d", id, i+1)
			}
			file := e.file
			if !path.IsAbs(file) && workdir != "" {
				file = path.Join(workdir, file)
			}
			if e.add {
				out = append(out, call(cid, "write", map[string]string{"filePath": file, "content": e.new}))
			} else {
				out = append(out, call(cid, "edit", map[string]string{"filePath": file, "oldString": e.old, "newString": e.new}))
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	var args map[string]json.RawMessage
	if json.Unmarshal([]byte(input), &args) != nil {
		return []chat.ToolCall{call(id, p.Name, map[string]string{"input": input})}
	}
	switch p.Name {
	case "shell", "container.exec", "shell_command", "exec_command", "local_shell":
		if cmd := codexCommand(args); cmd != "" {
			return []chat.ToolCall{call(id, "bash", map[string]string{"command": cmd})}
		}
	}
	return []chat.ToolCall{call(id, p.Name, args)}
}

// codexCommand is a shell call's command line: its "command" (a string, or
// argv whose "bash -lc SCRIPT" form is the script) or "cmd".
func codexCommand(args map[string]json.RawMessage) string {
	for _, k := range []string{"command", "cmd"} {
		var s string
		if json.Unmarshal(args[k], &s) == nil && s != "" {
			return s
		}
		var argv []string
		if json.Unmarshal(args[k], &argv) == nil && len(argv) > 0 {
			if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") {
				return argv[2]
			}
			return strings.Join(argv, " ")
		}
	}
	return ""
}

// patchEdit is one file of an apply_patch patch.
type patchEdit struct {
	file, old, new string
	add            bool
}

// patchEdits reads the files of a patch in Codex's format ("*** Update
// File: P" or "*** Add File: P", then lines marked "-", "+" or " ");
// deleted files are left out.
func patchEdits(patch string) []patchEdit {
	var out []patchEdit
	var cur *patchEdit
	var old, neu []string
	flush := func() {
		if cur != nil {
			cur.old, cur.new = lines(old), lines(neu)
			out = append(out, *cur)
		}
		cur, old, neu = nil, nil, nil
	}
	for ln := range strings.SplitSeq(patch, "\n") {
		switch {
		case strings.HasPrefix(ln, "*** Update File: "):
			flush()
			cur = &patchEdit{file: strings.TrimSpace(strings.TrimPrefix(ln, "*** Update File: "))}
		case strings.HasPrefix(ln, "*** Add File: "):
			flush()
			cur = &patchEdit{file: strings.TrimSpace(strings.TrimPrefix(ln, "*** Add File: ")), add: true}
		case strings.HasPrefix(ln, "*** Move to: "):
			// A rename: the edit goes on, under the old name.
		case strings.HasPrefix(ln, "***"):
			flush() // End Patch, Delete File
		case cur == nil || ln == "" || strings.HasPrefix(ln, "@@"):
		case ln[0] == '-':
			old = append(old, ln[1:])
		case ln[0] == '+':
			neu = append(neu, ln[1:])
		default:
			old, neu = append(old, ln[1:]), append(neu, ln[1:])
		}
	}
	flush()
	return out
}

// lines joins lines as a file holds them, each ended by a newline.
func lines(ls []string) string {
	if len(ls) == 0 {
		return ""
	}
	return strings.Join(ls, "\n") + "\n"
}
