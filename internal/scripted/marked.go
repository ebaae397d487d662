package scripted

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Marked returns the script the real-client tests drive Claude Code, Codex
// and OpenCode with, on any of the three APIs: what the model does is
// marked in the user's request.
//
//   - A title call gets "Scripted session".
//   - A compaction call gets a summary with one "## Task ID" section per
//     <task id="ID"> its prompt lists (rcm's brief; a line saying all was
//     done when it lists none), inside <analysis> and <summary> blocks
//     when the prompt asks for those (Claude Code's).
//   - After a tool result: "Done: " and the result's text (its first 200
//     bytes).
//   - "AGENT: prompt", when the call offers Claude Code's Agent tool: a
//     subagent given prompt.
//   - "RUN: cmd", when the call offers a shell tool: a call of it running
//     cmd. Claude Code's Bash or OpenCode's bash; else Codex's exec
//     (JavaScript calling exec_command, a custom tool call), else its
//     exec_command.
//   - Anything else: "OK.".
//
// Every answer reports 1200 prompt tokens (50000 while the request says
// BIG, so that the client compacts before its next turn) and 12 completion
// tokens.
func Marked() Script {
	return Script{Rules: []Rule{
		{When: Match{Kind: "title"}, Answer: marked(func(Call) (Reply, bool) { return Reply{Text: "Scripted session"}, true })},
		{When: Match{Kind: "compaction"}, Answer: marked(summary)},
		{When: Match{Last: "tool"}, Answer: marked(func(c Call) (Reply, bool) { return Reply{Text: "Done: " + echo(c.Tool)}, true })},
		{When: Match{Last: "user", User: "AGENT:"}, Answer: marked(subagent)},
		{When: Match{Last: "user", User: "RUN:"}, Answer: marked(run)},
		{Answer: marked(func(Call) (Reply, bool) { return Reply{Text: "OK."}, true })},
	}}
}

// echoMax bounds how much of a tool result Marked's answer repeats.
const echoMax = 200

var (
	runMark   = regexp.MustCompile(`RUN:\s*([^\n]+)`)
	agentMark = regexp.MustCompile(`AGENT:\s*([^\n]+)`)
	taskMark  = regexp.MustCompile(`<task id="([^"]+)"`)
)

// marked adds Marked's usage to what answer replies.
func marked(answer func(Call) (Reply, bool)) func(Call) (Reply, bool) {
	return func(c Call) (Reply, bool) {
		r, ok := answer(c)
		r.Usage = &Usage{Prompt: 1200, Completion: 12}
		if strings.Contains(c.User, "BIG") {
			r.Usage.Prompt = 50000
		}
		return r, ok
	}
}

func summary(c Call) (Reply, bool) {
	var b strings.Builder
	b.WriteString("Shared: one project.\n")
	tasks := taskMark.FindAllStringSubmatch(c.User, -1)
	for _, m := range tasks {
		fmt.Fprintf(&b, "\n## Task %s\nSummary of task %s.\n", m[1], m[1])
	}
	if len(tasks) == 0 {
		b.WriteString("\nAll requests so far were done.\n")
	}
	text := b.String()
	if strings.Contains(c.User, "<summary>") {
		text = "<analysis>The conversation so far.</analysis>\n<summary>\n" + text + "</summary>"
	}
	return Reply{Text: text}, true
}

func subagent(c Call) (Reply, bool) {
	m := agentMark.FindStringSubmatch(c.User)
	if m == nil || !slices.Contains(c.Tools, "Agent") {
		return Reply{}, false
	}
	prompt := strings.TrimSpace(m[1])
	return Reply{ToolCalls: []ToolCall{{Name: "Agent", Arguments: literal(map[string]any{
		"description": "Run it in a subagent", "prompt": prompt, "subagent_type": "general-purpose", "run_in_background": false})}}}, true
}

func run(c Call) (Reply, bool) {
	m := runMark.FindStringSubmatch(c.User)
	if m == nil {
		return Reply{}, false
	}
	cmd := strings.TrimSpace(m[1])
	var tc ToolCall
	switch {
	case slices.Contains(c.Tools, "Bash"), slices.Contains(c.Tools, "bash"):
		tc.Name = "Bash"
		if !slices.Contains(c.Tools, "Bash") {
			tc.Name = "bash"
		}
		tc.Arguments = literal(map[string]any{"command": cmd, "description": "Run the requested command"})
	case slices.Contains(c.Tools, "exec"):
		tc = ToolCall{Name: "exec", Custom: true, Arguments: "const r = await tools.exec_command({cmd: " + literal(cmd) + "});\ntext(r);\n"}
	case slices.Contains(c.Tools, "exec_command"):
		tc = ToolCall{Name: "exec_command", Arguments: literal(map[string]any{"cmd": cmd})}
	default:
		return Reply{}, false
	}
	return Reply{ToolCalls: []ToolCall{tc}}, true
}

// echo is the start of a tool result, cut on a rune boundary.
func echo(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= echoMax {
		return s
	}
	return strings.ToValidUTF8(s[:echoMax], "")
}

// literal is v as JSON, or a JavaScript literal, writes it: "<", ">" and
// "&" as they are, which json.Marshal would escape.
func literal(v any) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(v) // strings, booleans and maps of them always encode
	return strings.TrimSuffix(b.String(), "\n")
}
