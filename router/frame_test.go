package router

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
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

// codexCall is the body of a real Codex call (../shared/codex) rebuilt in
// working directory cwd, with the turn metadata's workspaces (the git
// repositories Codex reports) set to repos (none: the member dropped, as
// Codex does outside a repository), and with input: the capture's base
// prompt, skills and environment context, then items.
func codexCall(t *testing.T, cwd string, repos []string, items ...string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(chattest.SharedData(t)), "codex/classic_tools_tool_result_request.json"))
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(gjson.GetBytes(raw, "body").Raw)
	in := gjson.GetBytes(body, "input").Array()
	if !strings.Contains(in[2].Raw, "<cwd>/home/user/project</cwd>") {
		t.Fatalf("capture's third input item is not the environment context: %.200s", in[2].Raw)
	}
	input := []string{in[0].Raw, in[1].Raw, strings.ReplaceAll(in[2].Raw, "/home/user/project", cwd)}
	body, err = sjson.SetRawBytes(body, "input", []byte("["+strings.Join(append(input, items...), ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := sjson.Delete(gjson.GetBytes(body, "client_metadata.x-codex-turn-metadata").Str, "workspaces")
	for _, r := range repos {
		if err == nil {
			meta, err = sjson.SetRaw(meta, "workspaces."+strings.ReplaceAll(r, ".", `\.`), `{"latest_git_commit_hash":"9e82f7a9fc639bd54b2c27d7e98cc7b8b2b62eec","has_changes":true}`)
		}
	}
	if err == nil {
		body, err = sjson.SetBytes(body, "client_metadata.x-codex-turn-metadata", meta)
	}
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// codexTurn returns the input items of one Codex turn: the request, one
// exec_command call with its output, and the answer.
func codexTurn(n int, request, cmd, answer string) []string {
	item := func(v map[string]any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	call := fmt.Sprintf("call_%d", n)
	args, _ := json.Marshal(map[string]string{"cmd": cmd})
	return []string{
		item(map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": request}}}),
		item(map[string]any{"type": "function_call", "name": "exec_command", "arguments": string(args), "call_id": call}),
		item(map[string]any{"type": "function_call_output", "call_id": call, "output": "Process exited with code 0\nOutput:\nEDITED\n"}),
		item(map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": answer}}}),
	}
}

func parseResponses(t *testing.T, body []byte) *transcript.Transcript {
	t.Helper()
	tr, err := transcript.Parse(transcript.OpenAIResponses, body, transcript.Hints{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestReadFrameCodexRepo: Codex says whether its working directory is a
// git repository in its turn metadata (the workspaces it lists); a call
// without that metadata is taken to be in one.
func TestReadFrameCodexRepo(t *testing.T) {
	for _, c := range []struct {
		name, cwd string
		repos     []string
		noMeta    bool
		want      bool
	}{
		{"repository", "/home/user/project", []string{"/home/user/project"}, false, true},
		{"below the repository's root", "/home/user/project/sub", []string{"/home/user/project"}, false, true},
		{"folder", "/home/user/work", nil, false, false},
		{"another repository", "/home/user/work", []string{"/home/user/project"}, false, false},
		{"no metadata", "/home/user/work", nil, true, true},
	} {
		body := codexCall(t, c.cwd, c.repos, codexTurn(1, "Fix the tests.", "go test ./...", "Done.")...)
		if c.noMeta {
			body, _ = sjson.DeleteBytes(body, "client_metadata")
		}
		if got := readFrame(parseResponses(t, body)); got != (frame{cwd: c.cwd, repo: c.want}) {
			t.Errorf("%s: %+v, want repo %v", c.name, got, c.want)
		}
	}
}

// TestCodexCheckouts: Codex working in a folder of checkouts (no
// repository in its turn metadata), as `rcm bench run --harness codex` runs
// it, turns that name and work in different checkouts are different tasks,
// and a return to the first checkout is its task again.
func TestCodexCheckouts(t *testing.T) {
	r := mustNew(t, Config{})
	const dir = "/home/user/work"
	turns := [][]string{
		codexTurn(1, "In the checkout "+dir+"/ws3 (fixture/calc), fix this issue:\n\nAdd returns the difference of its arguments instead of their sum.",
			"sed -i 's/return a - b/return a + b/' "+dir+"/ws3/calc/add.go && echo EDITED", "Fixed calc/add.go."),
		codexTurn(2, "In the checkout "+dir+"/ws1 (fixture/calc), fix this issue:\n\nShout lowercases its input; it must put it in capitals.",
			"sed -i 's/strings.ToLower(s)/strings.ToUpper(s)/' "+dir+"/ws1/text/shout.go && echo EDITED", "Fixed text/shout.go."),
		codexTurn(3, "Submit: make sure the fix for calc-add in "+dir+"/ws3 is complete and the tests pass.",
			"cd "+dir+"/ws3 && go test ./... ; echo SUBMIT-DONE", "Submitted."),
	}
	s := store{}
	var items []string
	var p Plan
	var tr *transcript.Transcript
	for _, tn := range turns {
		// Each call ends with the turn's request, as Codex sends it.
		items = append(items, tn[0])
		tr = parseResponses(t, codexCall(t, dir, nil, items...))
		var err error
		if p, err = r.Route(context.Background(), tr, s.priors(tr), Options{}); err != nil {
			t.Fatal(err)
		}
		s.put(tr, p)
		items = append(items, tn[1:]...)
	}
	if len(p.Turns) != 3 {
		t.Fatalf("%d turns, want 3", len(p.Turns))
	}
	a, b, c := p.Turns[0], p.Turns[1], p.Turns[2]
	if a.Task == b.Task || c.Task != a.Task || p.Fallback {
		t.Errorf("tasks %q %q %q (fallback %v), want ws3's, ws1's, ws3's", a.Task, b.Task, c.Task, p.Fallback)
	}
}

// TestReadFrameCodexResumed: a Codex thread resumed in another directory
// carries a second environment context before the resumed request (as Codex
// 0.171 sends it); the frame is the latest directory, the one the call's
// turn metadata describes, so the earlier repository's folders stay one
// workspace beside it.
func TestReadFrameCodexResumed(t *testing.T) {
	body := codexCall(t, "/home/user/project", nil)
	env := gjson.GetBytes(body, "input.2").Raw
	items := append(codexTurn(1, "Fix the parser.", "sed -i 's/a/b/' /home/user/project/parse/parse.go && echo EDITED", "Fixed."),
		codexTurn(2, "Now the lexer.", "sed -i 's/c/d/' /home/user/project/lex/lex.go && echo EDITED", "Fixed.")...)
	items = append(items, strings.ReplaceAll(env, "/home/user/project", "/home/user/notes"))
	items = append(items, codexTurn(3, "Write todo.md.", "printf x > todo.md", "Wrote.")[:1]...)
	// The call is made in /home/user/notes, no repository: no workspaces.
	tr := parseResponses(t, codexCall(t, "/home/user/project", nil, items...))
	f := readFrame(tr)
	if f != (frame{cwd: "/home/user/notes"}) {
		t.Fatalf("frame %+v, want the resumed directory, no repository", f)
	}
	parse, _ := f.place("/home/user/project/parse/parse.go")
	lex, _ := f.place("/home/user/project/lex/lex.go")
	if parse != "/home/user/project" || lex != parse {
		t.Errorf("workspaces %q and %q, want the earlier repository's", parse, lex)
	}
}
