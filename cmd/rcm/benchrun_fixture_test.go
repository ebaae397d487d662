package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/rcm-dev/rcm/internal/scripted"
)

// fixtureTools are a harness's own tools as fixtureModel calls them.
type fixtureTools struct {
	show  func(file string) scripted.ToolCall           // shows a file
	edit  func(file, old, new string) scripted.ToolCall // replaces old with new in it
	write func(file, content string) scripted.ToolCall  // writes a new file
	run   func(cmd string) scripted.ToolCall            // runs a shell command
}

// claudeTools are Claude Code's Read, Edit (which refuses a file not read
// first), Write and Bash.
var claudeTools = fixtureTools{
	show: func(file string) scripted.ToolCall { return toolCall("Read", map[string]any{"file_path": file}) },
	edit: func(file, old, new string) scripted.ToolCall {
		return toolCall("Edit", map[string]any{"file_path": file, "old_string": old, "new_string": new})
	},
	write: func(file, content string) scripted.ToolCall {
		return toolCall("Write", map[string]any{"file_path": file, "content": content})
	},
	run: func(cmd string) scripted.ToolCall {
		return toolCall("Bash", map[string]any{"command": cmd, "description": "Run the tests"})
	},
}

// codexTools are Codex's exec_command, the classic tool Codex offers a
// model it does not know (such as fixture-model), running cat, sed and
// printf.
var codexTools = fixtureTools{
	show: func(file string) scripted.ToolCall { return codexCommand("cat " + file) },
	edit: func(file, old, new string) scripted.ToolCall {
		return codexCommand("sed -i 's/" + old + "/" + new + "/' " + file + " && echo EDITED")
	},
	write: func(file, content string) scripted.ToolCall {
		return codexCommand("mkdir -p " + filepath.Dir(file) + " && printf '" + strings.ReplaceAll(content, "\n", `\n`) + "' > " + file)
	},
	run: codexCommand,
}

func codexCommand(cmd string) scripted.ToolCall {
	return toolCall("exec_command", map[string]any{"cmd": cmd})
}

func toolCall(name string, args map[string]any) scripted.ToolCall {
	b, _ := json.Marshal(args) // strings always marshal
	return scripted.ToolCall{Name: name, Arguments: string(b)}
}

// fixtureWork is what the fixture's requests ask for, each told by a mark
// in its text: a fix (old replaced with new in file) or a new file.
var fixtureWork = []struct{ mark, file, old, new, content string }{
	{mark: "instead of their sum", file: "calc/add.go", old: "return a - b", new: "return a + b"},
	{mark: "Shout lowercases", file: "text/shout.go", old: `return strings.ToLower(s) + "!"`, new: `return strings.ToUpper(s) + "!"`},
	{mark: "notes/todo.md", file: "notes/todo.md", content: "# Open items\n\n- fix Add\n"},
	{mark: "CHANGELOG.md", file: "CHANGELOG.md", content: "# Changelog\n\n## Unreleased\n"},
	{mark: "AUTHORS", file: "AUTHORS", content: "The rcm developers\n"},
}

// checkoutPath finds the checkout a request names (the runner substitutes
// it for the spec's {checkout}).
var checkoutPath = regexp.MustCompile(`(?:^|\s)(/\S+?)[,:]?(?:\s|$)`)

// fixtureModel is a scripted model for the fixture's spec, driving a
// harness's own tools: for each request it shows the file to fix, edits it
// once the file is back, writes new files, runs the tests on a submit, and
// answers in text once its tool has run.
func fixtureModel(tools fixtureTools) scripted.Script {
	answer := func(c scripted.Call) (scripted.Reply, bool) {
		dir := ""
		if m := checkoutPath.FindStringSubmatch(c.User); m != nil {
			dir = m[1]
		}
		ran := c.Last == "tool" // the tool called for the request has run
		reply := scripted.Reply{Text: "OK.", Usage: &scripted.Usage{Prompt: 1200, Completion: 12}}
		call := func(tc scripted.ToolCall) { reply.Text, reply.ToolCalls = "", []scripted.ToolCall{tc} }
		switch {
		case strings.HasPrefix(c.User, "Submit:") && !ran:
			call(tools.run("cd " + dir + " && go test ./... ; echo SUBMIT-DONE"))
		case strings.HasPrefix(c.User, "Submit:"):
			reply.Text = "Submitted."
		}
		for _, w := range fixtureWork {
			file := filepath.Join(dir, w.file)
			switch {
			case strings.HasPrefix(c.User, "Submit:") || !strings.Contains(c.User, w.mark):
			case w.content != "" && !ran:
				call(tools.write(file, w.content))
			case w.content != "":
				reply.Text = "Wrote " + w.file + "."
			case !ran:
				call(tools.show(file))
			case strings.Contains(c.Tool, w.old): // the file as it was: fix it
				call(tools.edit(file, w.old, w.new))
			default:
				reply.Text = "Fixed " + w.file + "."
			}
		}
		return reply, true
	}
	return scripted.Script{Models: []string{"fixture-model"}, Rules: []scripted.Rule{{Answer: answer}}}
}
