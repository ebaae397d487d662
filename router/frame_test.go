package router

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/tidwall/gjson"
)

// TestReadFrame reads the working directory of each harness from real
// captures (../shared), and from the forms of their system prompts.
func TestReadFrame(t *testing.T) {
	for _, c := range []struct {
		name, system string
		want         frame
	}{
		{"opencode repo", "x\n<env>\n  Working directory: /home/dev/project\n  Is directory a git repo: yes\n</env>", frame{cwd: "/home/dev/project", repo: true}},
		{"opencode folder", "x\n<env>\n  Working directory: /work\n  Is directory a git repo: no\n</env>", frame{cwd: "/work"}},
		{"opencode unsaid", "You are a coding agent. Working directory: /work", frame{cwd: "/work"}},
		{"claude code", "# Environment\n - Primary working directory: /home/user/project\n - Is a git repository: true\n", frame{cwd: "/home/user/project", repo: true}},
		{"codex", "<environment_context>\n  <cwd>/home/user/project</cwd>\n  <shell>bash</shell>", frame{cwd: "/home/user/project", repo: true}},
		{"inferred", "You are a coding agent.", frame{cwd: "/home/dev/code"}},
	} {
		tr := chattest.Parse(t, chattest.Body(chattest.System(c.system), chattest.User("In /home/dev/code/a fix the login test.")))
		if got := readFrame(tr); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	// The system prompts of the real Claude Code and Codex captures.
	for _, c := range []struct{ file, system string }{
		{"claude-code/first_agent_request.json", "body.messages"},
		{"codex/first_agent_request.json", "body.input"},
	} {
		raw, err := os.ReadFile(filepath.Join(filepath.Dir(chattest.SharedData(t)), c.file))
		if err != nil {
			t.Fatal(err)
		}
		var text string
		var walk func(v gjson.Result)
		walk = func(v gjson.Result) { // every "text" string, in order
			v.ForEach(func(k, x gjson.Result) bool {
				if k.String() == "text" && x.Type == gjson.String {
					text += x.String() + "\n"
				} else if x.IsArray() || x.IsObject() {
					walk(x)
				}
				return true
			})
		}
		walk(gjson.GetBytes(raw, c.system))
		tr := chattest.Parse(t, chattest.Body(chattest.System(text), chattest.User("hello")))
		if got := readFrame(tr); got.cwd != "/home/user/project" {
			t.Errorf("%s: frame %+v", c.file, got)
		}
	}
}
