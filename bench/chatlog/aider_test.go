package chatlog

import (
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestAiderReplyShapes: what aider writes besides "```" fences and "Added
// FILE to the chat" (shapes of real histories, in my own wording): its
// other fences (a README holding backticks is fenced "````" or
// "<source>"), its question whether to add a file the reply names, in
// both wordings, and a command the person ran with /run or "!".
func TestAiderReplyShapes(t *testing.T) {
	for _, c := range []struct {
		name, request, reply, want string
	}{
		{"four backticks around a README's fence", "document the CLI",
			"README.md\n````\n<<<<<<< SEARCH\n## Run\n=======\n## Run\n\n```bash\npython cli.py\n```\n\nhttp://localhost:8000/docs\n>>>>>>> REPLACE\n````\n\n> Applied edit to README.md  \n",
			"assistant edit:/w/README.md | tool"},
		{"a source fence", "ignore the build folder",
			".gitignore\n<source>\n<<<<<<< SEARCH\n=======\nbuild/\n>>>>>>> REPLACE\n</source>\n\n> Applied edit to .gitignore  \n",
			"assistant write:/w/.gitignore | tool"},
		{"a source fence with its language", "add a ping route",
			"app/main.py\n<source>python\n<<<<<<< SEARCH\nroutes = []\n=======\nroutes = [ping]\n>>>>>>> REPLACE\n</source>\n",
			"assistant edit:/w/app/main.py | tool"},
		{"a file the reply names, asked and added", "why does login fail?",
			"The check is in auth/session.py.\n\n> Add auth/session.py to the chat? (Y)es/(N)o/(D)on't ask again [Yes]: y  \n",
			"assistant read:/w/auth/session.py | tool"},
		{"asked under a line naming it, by default", "why does login fail?",
			"See auth/session.py.\n\n> auth/session.py  \n> Add file to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:  \n",
			"assistant read:/w/auth/session.py | tool"},
		{"asked and refused, and a URL", "why does login fail?",
			"See auth/session.py and https://x.dev/a.\n\n> Add auth/session.py to the chat? (Y)es/(N)o [Yes]: n  \n> Add https://x.dev/a to the chat? (Y)es/(N)o [Yes]: y  \n",
			"assistant"},
		{"/run and its output", "/run python -m app",
			"> Add the output to the chat?\n(Y)es/(n)o/message with instructions: y  \n> Traceback (most recent call last):  \n>   File \"app/__main__.py\", line 3  \n\nThe import is wrong.\n\n> Tokens: 2k sent  \n",
			"assistant bash:python -m app | tool | assistant"},
		{"! and no output kept", "!pytest -q", "> Added 3 lines of output to the chat.  \n",
			"assistant bash:pytest -q | tool"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids := 0
			ms := aiderReply(c.request, strings.Split(c.reply, "\n"), newWork("/w", &ids))
			if got := summary(ms); got != c.want {
				t.Errorf("%s\nwant %s", got, c.want)
			}
			if c.name == "/run and its output" {
				out := ms[1].Content
				if out != "Traceback (most recent call last):\nFile \"app/__main__.py\", line 3" {
					t.Errorf("output %q", out)
				}
			}
			if c.name == "four backticks around a README's fence" {
				if n := gjson.Get(ms[0].ToolCalls[0].Function.Arguments, "newString").String(); n != "## Run\n\n```bash\npython cli.py\n```\n\nhttp://localhost:8000/docs\n" {
					t.Errorf("newString %q", n)
				}
			}
		})
	}
}

// TestAiderCheckout: a log whose only absolute path is a file-name line
// deep in the checkout is placed in the checkout its relative names are
// relative to, not in the absolute path's folder.
func TestAiderCheckout(t *testing.T) {
	log := "# aider chat started at 2025-03-01 09:00:00\n\n" +
		"#### fix the device loader  \n\n" +
		"/Users/ana/Downloads/app/exe/engine/device.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n\n" +
		"> Applied edit to /Users/ana/Downloads/app/exe/engine/device.py  \n\n" +
		"#### and the web block  \n\n" +
		"exe/webui/block.py\n```python\n<<<<<<< SEARCH\ny = 1\n=======\ny = 2\n>>>>>>> REPLACE\n```\n\n" +
		"> Applied edit to exe/webui/block.py  \n\n" +
		"#### and the engine again  \n\n" +
		"exe/engine/device.py\n```python\n<<<<<<< SEARCH\nx = 2\n=======\nx = 3\n>>>>>>> REPLACE\n```\n"
	w, turns := parsed(log, "/home/user/app", parseAider)
	if w != "/Users/ana/Downloads/app" {
		t.Errorf("workdir %s", w)
	}
	if got := summary(turns[1].Messages); got != "assistant edit:/Users/ana/Downloads/app/exe/webui/block.py | tool" {
		t.Errorf("turn 2: %s", got)
	}
}

// TestAiderHeaderless: a history copied from the middle of a session,
// without aider's "# aider chat started at" line, is still aider's by its
// name, and its opening is a session before the first header.
func TestAiderHeaderless(t *testing.T) {
	dir := t.TempDir()
	log := "> Running git init  \n\n#### add a license  \n\nAdded LICENSE.\n\n" +
		"# aider chat started at 2025-05-01 10:00:00\n\n#### and a README  \n\nDone.\n"
	f := dir + "/.aider.chat.history.md"
	if err := os.WriteFile(f, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	ss, skips, err := Read(f)
	if err != nil || len(skips) > 0 || len(ss) != 2 || ss[0].Turns[0].Request != "add a license" || ss[1].Turns[0].Request != "and a README" {
		t.Fatalf("%+v, %v, %v", ss, skips, err)
	}
	if err := os.WriteFile(dir+"/notes.md", []byte("#### a heading  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Read(dir + "/notes.md"); err == nil {
		t.Error("a markdown file of another name read as aider's")
	}
}
