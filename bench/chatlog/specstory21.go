package chatlog

import (
	"encoding/json"
	"html"
	"regexp"
	"strconv"
	"strings"
)

// SpecStory's Markdown v2.1 <tool-use> element, as its CLI and its
// extensions write it for Claude Code, Codex, Cursor and VS Code Copilot
// (specstory-cli pkg/markdown): an opening tag naming the tool's type and
// name, a <summary> ("Tool use: **name**", then what the provider adds),
// and a body each provider fills its own way.
var (
	specElement = regexp.MustCompile(`^\s*<tool-use data-tool-type="([^"]*)" data-tool-name="([^"]*)"`)
	specInput   = regexp.MustCompile("^- (\\w+):(?: `(.*)`)?\\s*$")           // VS Code's input list
	specLink    = regexp.MustCompile("\\[`([^`]+)`\\]")                       // VS Code's "Reading [`f`](f)"
	specTicked  = regexp.MustCompile("^\\s*`([^`]+)`\\s*$")                   // Claude Code's path or command line
	specPattern = regexp.MustCompile("^\\s*path `([^`]*)` pattern `([^`]*)`") // Claude Code's Grep and Glob
	specPatch   = regexp.MustCompile("^\\*\\*(Update|Add|Delete): `([^`]+)`\\*\\*\\s*$")
	specUpdated = regexp.MustCompile(`^\s*The file (.+?) has been updated successfully`)
	specCreated = regexp.MustCompile(`^\s*File created successfully at: (.+?)\s*$`)
	// Codex's code mode: its exec tool's JavaScript runs a command as
	// tools.exec_command({cmd:"..."}), the export cutting it short.
	specCodeCmd = regexp.MustCompile(`tools\.exec_command\(\{\s*cmd:\s*"((?:[^"\\\n]|\\.)*)`)
)

// element is a parsed <tool-use> element.
type element struct {
	kind, name string
	// detail is what the summary says after the tool's name: Cursor's
	// "Read file: P" after a "•", Codex's `command`, VS Code's link.
	detail string
	body   []string // the lines between the summary and the closing tags
}

// readElement parses a block that is a <tool-use> element.
func readElement(b []string) (element, bool) {
	var e element
	first := -1
	for i, ln := range b {
		if strings.TrimSpace(ln) != "" {
			first = i
			break
		}
	}
	if first < 0 {
		return e, false
	}
	m := specElement.FindStringSubmatch(b[first])
	if m == nil {
		return e, false
	}
	e.kind, e.name = m[1], m[2]
	rest, found := b[first:], false
	for i, ln := range rest {
		if sm := specSummary.FindStringSubmatch(ln); sm != nil {
			s := html.UnescapeString(sm[1])
			if _, after, ok := strings.Cut(s, "**"+e.name+"**"); ok {
				s = after
			}
			s = strings.TrimSpace(s)
			if d, ok := strings.CutPrefix(s, "•"); ok {
				s = strings.TrimSpace(d)
			} else if t := specTicked.FindStringSubmatch(s); t != nil {
				s = t[1]
			}
			e.detail, rest, found = s, rest[i+1:], true
			break
		}
	}
	if !found {
		rest = rest[1:] // the body follows the opening tag
	}
	for _, ln := range rest {
		switch strings.TrimSpace(ln) {
		case "</details>", "</tool-use>", "</details></tool-use>", "<details>":
			continue
		}
		e.body = append(e.body, ln)
	}
	return e, true
}

// empty reports whether the element says nothing past its tool's name.
func (e element) empty() bool {
	return e.detail == "" && strings.TrimSpace(strings.Join(e.body, "")) == ""
}

// add adds the element's tool step: the arguments each provider keeps
// (VS Code's input list, Cursor's summary and Parameters, Codex's command
// and patch, Claude Code's path or command line and its result
// sentences); terminal runs become bash, file creation write, edits edit,
// reads read, searches grep; anything else keeps its name with what the
// summary says. A shell run's output is the fence after its command.
func (e element) add(w *work) {
	none := "(the log does not keep the tool's output)"
	in := e.inputs()
	fs := fences(e.body)
	text := strings.Join(e.body, "\n")
	shell := e.kind == "shell" || e.name == "PowerShell" // Claude Code's on Windows is "unknown"
	file, command, pattern := in["filePath"], in["command"], ""
	if e.kind == "search" {
		pattern = in["query"] // VS Code's; another tool's query is no pattern
	}
	for _, k := range []string{"target_file", "targetFile", "file_path"} {
		if file == "" {
			file = in[k]
		}
	}
	if pattern == "" {
		pattern = in["pattern"]
	}
	switch d := e.detail; {
	case strings.HasPrefix(d, "Read file: "):
		file = strings.TrimPrefix(d, "Read file: ")
	case strings.HasPrefix(d, "Edit file: "):
		file = strings.TrimPrefix(d, "Edit file: ")
	case strings.HasPrefix(d, "Run command: "):
		command = strings.TrimPrefix(d, "Run command: ")
	case e.kind == "shell" && d != "":
		command = d // Codex's `command`
	case file == "" && specLink.MatchString(d):
		file = specLink.FindStringSubmatch(d)[1]
	}
	for _, ln := range e.body {
		if m := specPattern.FindStringSubmatch(ln); m != nil {
			pattern = m[2]
			continue
		}
		if m := specTicked.FindStringSubmatch(ln); m != nil && file == "" && command == "" {
			if shell {
				command = m[1]
			} else if e.kind == "read" {
				file = m[1]
			}
			continue
		}
		if file != "" {
			continue
		}
		if m := specUpdated.FindStringSubmatch(ln); m != nil {
			file = m[1]
		} else if m := specCreated.FindStringSubmatch(ln); m != nil {
			file = m[1]
		}
	}
	if strings.Contains(file, "://") {
		file = "" // a fetched URL
	}
	if m := specCodeCmd.FindStringSubmatch(text); command == "" && m != nil {
		command = m[1]
		if c, err := strconv.Unquote(`"` + m[1] + `"`); err == nil {
			command = c
		}
	}
	after := 0 // where the output may start
	if c, end, ok := shellFence(e.body); shell && command == "" && ok {
		command, after = c, end // Claude Code's and Cursor's fenced command
	}
	out := none
	if o, ok := output(e.body[after:]); ok && shell {
		out = o
	}
	edits := e.kind == "write" || e.name == "replace_string_in_file" // VS Code's is "generic"
	switch {
	case command != "":
		w.call("bash", map[string]any{"command": command}, out)
	case e.kind == "write" && e.patch(w):
	case e.kind == "write" && file != "" && (strings.EqualFold(e.name, "write") || e.name == "create_file" || specCreated.MatchString(text)):
		content := in["content"]
		if content == "" && len(fs) > 1 {
			content = fs[0] // Claude Code's Write: the file's text, then the result
		}
		w.call("write", map[string]any{"filePath": w.abs(file), "content": content}, "Wrote file successfully.")
	case edits && file != "":
		old, neu := in["oldString"], in["newString"]
		if old == "" && neu == "" {
			old, neu = diffSides(diffFences(e.body))
		}
		w.call("edit", map[string]any{"filePath": w.abs(file), "oldString": old, "newString": neu}, "Edit applied.")
	case e.kind == "read" && file != "":
		w.call("read", map[string]any{"filePath": w.abs(file)}, "(the log does not keep the file's content)")
	case pattern != "":
		w.call("grep", map[string]any{"pattern": pattern}, none)
	default:
		what := e.detail
		for _, ln := range e.body { // Claude Code's description line
			if t := strings.TrimSpace(ln); what == "" && t != "" && !strings.HasPrefix(t, "```") && !strings.HasPrefix(t, "<") && !strings.HasPrefix(t, "**") && !strings.HasPrefix(t, "- ") {
				what = t
			}
		}
		if what == "" {
			what = e.name
		}
		w.call(toolName(e.name), map[string]any{"description": firstLine(what)}, none)
	}
}

// shellFence returns the first fenced block of a shell language in lines
// (a command as Claude Code and Cursor show it; output is in a plain or
// "text" fence) and the index of the line after it.
func shellFence(lines []string) (string, int, bool) {
	for i, ln := range lines {
		switch strings.TrimSpace(ln) {
		case "```bash", "```sh", "```shell", "```zsh", "```powershell", "```ps1", "```console", "```cmd":
			for j := i + 1; j < len(lines); j++ {
				if strings.TrimSpace(lines[j]) == "```" {
					return strings.TrimSpace(strings.Join(lines[i+1:j], "\n")), j + 1, true
				}
			}
		}
	}
	return "", 0, false
}

// output is a shell run's output: from the first fence in lines to the
// last fence's end, whole, since what a command prints may hold fences of
// its own.
func output(lines []string) (string, bool) {
	first, last := -1, -1
	for i, ln := range lines {
		if strings.HasPrefix(strings.TrimSpace(ln), "```") {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if last <= first {
		return "", false
	}
	return strings.Join(lines[first+1:last], "\n"), true
}

// inputs reads the arguments an element lists: VS Code's "- key: `value`"
// (or "- key:" and a fenced value), and Cursor's "Parameters:" JSON.
func (e element) inputs() map[string]string {
	in := map[string]string{}
	fs := fences(e.body)
	for i, ln := range e.body {
		if im := specInput.FindStringSubmatch(ln); im != nil {
			if v := im[2]; v != "" {
				in[im[1]] = v
			} else if len(fs) > 0 {
				in[im[1]], fs = fs[0], fs[1:]
			}
		}
		if strings.TrimSpace(ln) == "Parameters:" {
			if ps := fences(e.body[i:]); len(ps) > 0 {
				var args map[string]any
				if json.Unmarshal([]byte(ps[0]), &args) == nil {
					for k, v := range args {
						if s, ok := v.(string); ok && s != "" && in[k] == "" {
							in[k] = s
						}
					}
				}
			}
		}
	}
	return in
}

// patch adds Codex's apply_patch: one edit per "**Update: `P`**" with the
// diff under it, a write per "**Add: `P`**"; it reports whether there was
// any.
func (e element) patch(w *work) bool {
	did := false
	for i, ln := range e.body {
		m := specPatch.FindStringSubmatch(strings.TrimSpace(ln))
		if m == nil || m[1] == "Delete" {
			continue
		}
		end := len(e.body)
		for j := i + 1; j < len(e.body); j++ {
			if specPatch.MatchString(strings.TrimSpace(e.body[j])) {
				end = j
				break
			}
		}
		old, neu := diffSides(fences(e.body[i+1 : end]))
		if m[1] == "Add" {
			w.call("write", map[string]any{"filePath": w.abs(m[2]), "content": neu}, "Wrote file successfully.")
		} else {
			w.call("edit", map[string]any{"filePath": w.abs(m[2]), "oldString": old, "newString": neu}, "Edit applied.")
		}
		did = true
	}
	return did
}

// diffFences returns the fences of lines that hold a diff ("```diff").
func diffFences(lines []string) []string {
	var out []string
	for i, ln := range lines {
		if strings.TrimSpace(ln) == "```diff" {
			if fs := fences(lines[i:]); len(fs) > 0 {
				out = append(out, fs[0])
			}
		}
	}
	return out
}
