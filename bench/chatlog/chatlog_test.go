package chatlog

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/bench/trajectory"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/tidwall/gjson"
)

// corpus is testdata/real-sessions, the repository's labelled corpus.
func corpus(tb testing.TB) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "real-sessions")
}

// TestCorpus reads every session of testdata/real-sessions: each parses
// with its labels (Read checks their count and prefixes), and every turn's
// tool calls are answered.
func TestCorpus(t *testing.T) {
	ss, skips, err := Read(corpus(t))
	if err != nil || len(skips) > 0 {
		t.Fatal(err, skips)
	}
	// 69 logs; aider's /clear and /reset start 9 more conversations.
	if len(ss) != 78 {
		t.Fatalf("%d sessions, want 78", len(ss))
	}
	turns, calls := 0, map[string]int{}
	for _, s := range ss {
		if len(s.Labels) != len(s.Turns) || s.Repo == "" || s.Path != filepath.Join(corpus(t), "raw", strings.Split(s.Name, ".")[0]+".md") {
			t.Errorf("%s: %d labels for %d turns, repo %q, path %s", s.Name, len(s.Labels), len(s.Turns), s.Repo, s.Path)
		}
		turns += len(s.Turns)
		for i, turn := range s.Turns {
			if err := trajectory.ValidateMessages(turn.Messages); err != nil {
				t.Errorf("%s: turn %d: %v", s.Name, i+1, err)
			}
			for _, m := range turn.Messages {
				for _, c := range m.ToolCalls {
					calls[c.Function.Name]++
				}
			}
		}
	}
	if turns != 1393 {
		t.Errorf("%d turns, want 1393", turns)
	}
	t.Logf("tool calls: %v", calls)
}

// summary is a turn's messages in short: role, then each tool call's name
// and path or command.
func summary(ms []chat.Message) string {
	var parts []string
	for _, m := range ms {
		s := m.Role
		for _, c := range m.ToolCalls {
			args := gjson.Parse(c.Function.Arguments)
			s += " " + c.Function.Name + ":" + args.Get("filePath").String() + args.Get("command").String()
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " | ")
}

func TestAider(t *testing.T) {
	// Snippets of testdata/real-sessions: 011's opening (a message with a
	// blank line, a SEARCH/REPLACE creation, a README's "#### Windows"
	// heading), 006's shell runs, 002's /add and whole-file edit, and a
	// file added after the reply (read-only, with a drive letter).
	log := "# aider chat started at 2025-01-14 11:56:56\n\n" +
		"> Aider v0.71.0  \n\n" +
		"#### Description: Create a tool to log and categorize expenses.  \n####   \n#### Libraries: csv, datetime.  \n\n" +
		"I'll create these files:\n\nexpense_tracker.py\n```python\n<<<<<<< SEARCH\n=======\nimport csv\n>>>>>>> REPLACE\n```\n\n" +
		"README.md\n```markdown\n<<<<<<< SEARCH\n=======\n# Expense Tracker\n#### Windows\n```bash\npython main.py\n```\n>>>>>>> REPLACE\n```\n\n" +
		"> Applied edit to expense_tracker.py  \n> Applied edit to README.md  \n\n" +
		"#### revert commit  \n\nYou can revert the last commit with:\n\n```bash\ngit revert a8efc60\n```\n\n" +
		"> git revert a8efc60  \n> Run shell command? (Y)es/(N)o/(S)kip all/(D)on't ask again [Yes]: y  \n> Running git revert a8efc60  \n" +
		"> Add command output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]: y  \n> Added 12 lines of output to the chat.  \n\n" +
		"#### /add src\\component\\App.js  \n> Added src\\component\\App.js to the chat  \n\n" +
		"#### add a clear button  \n\nsrc\\component\\App.js\n```\nimport React from \"react\";\n\nexport default App;\n```\n\nThis adds a button.\n\n> Applied edit to src\\component\\App.js  \n" +
		"> Add file to the chat? (Y)es/(N)o [Yes]: y  \n> Added D:\\work\\error.log to the chat (read-only).  \n"
	turns := parseAider(log, "/home/user/calc")
	want := []struct{ request, summary string }{
		{"Description: Create a tool to log and categorize expenses.\n\nLibraries: csv, datetime.",
			"assistant write:/home/user/calc/expense_tracker.py write:/home/user/calc/README.md | tool | tool"},
		{"revert commit", "assistant bash:git revert a8efc60 | tool"},
		{`/add src\component\App.js`, "assistant read:/home/user/calc/src/component/App.js | tool"},
		{"add a clear button", "assistant write:/home/user/calc/src/component/App.js | tool | assistant read:/work/error.log | tool"},
	}
	if len(turns) != len(want) {
		t.Fatalf("%d turns, want %d: %+v", len(turns), len(want), turns)
	}
	for i, w := range want {
		if turns[i].Request != w.request || summary(turns[i].Messages) != w.summary {
			t.Errorf("turn %d: %q: %s\nwant %q: %s", i+1, turns[i].Request, summary(turns[i].Messages), w.request, w.summary)
		}
	}
	readme := gjson.Get(turns[0].Messages[0].ToolCalls[1].Function.Arguments, "content").String()
	if readme != "# Expense Tracker\n#### Windows\n```bash\npython main.py\n```\n" {
		t.Errorf("README content %q", readme)
	}
	if whole := gjson.Get(turns[3].Messages[0].ToolCalls[0].Function.Arguments, "content").String(); whole != "import React from \"react\";\n\nexport default App;\n" {
		t.Errorf("whole file %q", whole)
	}
	if r := turns[1].Messages[1].Content; !strings.Contains(r, "12 lines") {
		t.Errorf("shell result %q", r)
	}
	if got := aiderSessions("# aider chat started at 1\n#### a  \n# aider chat started at 2\n#### b  \n"); len(got) != 2 || got[1] != "# aider chat started at 2\n#### b  \n" {
		t.Errorf("sessions %q", got)
	}
	// An unlabelled history file: one session per start line with a message.
	f := filepath.Join(t.TempDir(), ".aider.chat.history.md")
	history := "# aider chat started at 1\n\n#### a  \nok\n\n# aider chat started at 2\n\n> /exit  \n\n# aider chat started at 3\n\n#### b  \n"
	if err := os.WriteFile(f, []byte(history), 0o644); err != nil {
		t.Fatal(err)
	}
	ss, skips, err := Read(f)
	if err != nil || len(skips) > 0 || len(ss) != 2 || ss[0].Name != ".aider.chat.history-1" || ss[1].Name != ".aider.chat.history-3" || ss[1].Turns[0].Request != "b" || ss[1].Workdir != "/home/user/project" {
		t.Errorf("%+v, %v", ss, err)
	}
}

func TestSpecStory(t *testing.T) {
	// Snippets of 012 (v2: tool steps with commands, reads and diffs; steps
	// with no text between them are one model step) and
	// 003 (the old format's "_****_" steps and an unnamed diff), and 004's
	// empty message (a screenshot alone).
	log := "<!-- Generated by SpecStory -->\n\n# hola (2025-10-27 21:08Z)\n\n" +
		"_**User (2025-10-27 21:14Z)**_\n\nlanza el jar del proyecto\n\n---\n\n_**Assistant (default)**_\n\n" +
		"Te ayudo a lanzar el JAR.\n\n---\n\nTool use: **run_terminal_cmd**\n\n```bash\ncd /Users/german/englishGame && java -jar target/g.jar\n```\n\n```\nINFO Initializing\n```\n\n---\n\n" +
		"Tool use: **read_file**\n\nRead file: /Users/german/englishGame/src/View.java\n\n---\n\n" +
		"Tool use: **search_replace**\n\n\n<details><summary>Edit file: src/View.java</summary>\n\n```diff\n@@ -46,5 +46,5 @@\n          this.x = x;\n-         setTitle(\"Saved Words - Game\");\n+         setTitle(\"Saved Words\");\n```\n\n</details>\n\n---\n\n" +
		"¡Perfecto!\n\n---\n\n" +
		"_**User**_\n\n\n\n---\n\n_**Assistant**_\n\nI see a screenshot.\n\n_****_\n\n```diff\n- \n+ # plan\n```\n\n---\n\n" +
		"_**User**_\n\nok\n\n---\n\n_**Assistant**_\n\n_**Assistant**_\n\nRead file: undefined\n"
	turns := parseSpecStory(log, "/home/user/englishGame")
	want := []struct{ request, summary string }{
		{"lanza el jar del proyecto", "assistant bash:cd /Users/german/englishGame && java -jar target/g.jar read:/Users/german/englishGame/src/View.java edit:/home/user/englishGame/src/View.java | tool | tool | tool | assistant"},
		{"", "assistant"},
		{"ok", "assistant"},
	}
	if len(turns) != len(want) {
		t.Fatalf("%d turns, want %d", len(turns), len(want))
	}
	for i, w := range want {
		if turns[i].Request != w.request || summary(turns[i].Messages) != w.summary {
			t.Errorf("turn %d: %q: %s\nwant %q: %s", i+1, turns[i].Request, summary(turns[i].Messages), w.request, w.summary)
		}
	}
	ms := turns[0].Messages
	if ms[1].Content != "INFO Initializing" || ms[0].Content != "Te ayudo a lanzar el JAR." {
		t.Errorf("command step %q, output %q", ms[0].Content, ms[1].Content)
	}
	// A CRLF export: the message keeps its "\r" (labels quote it so).
	crlf := parseSpecStory("_**User**_\r\n\r\nWeird\r\n\r\nline two\r\n\r\n---\r\n\r\n_**Assistant**_\r\n\r\nok\r\n", "/w")
	if len(crlf) != 1 || crlf[0].Request != "Weird\r\n\r\nline two" || summary(crlf[0].Messages) != "assistant" {
		t.Errorf("CRLF: %+v", crlf)
	}
	edit := gjson.Parse(ms[0].ToolCalls[2].Function.Arguments)
	if edit.Get("oldString").String() != "        this.x = x;\n        setTitle(\"Saved Words - Game\");\n" ||
		edit.Get("newString").String() != "        this.x = x;\n        setTitle(\"Saved Words\");\n" {
		t.Errorf("edit %s", edit.Raw)
	}
}

func TestSpecStory21(t *testing.T) {
	// A snippet of a Markdown v2.1 export (VS Code Copilot): each step
	// opens with a marker, tools are <tool-use> elements with an Input
	// list, reasoning is a <think> element.
	log := "<!-- Generated by SpecStory, Markdown v2.1.0 -->\n\n_**User (2025-12-23 19:42:55Z)**_\n\nadd purchase orders\n\n---\n\n" +
		"_**Agent (copilot/claude-sonnet-4.5)**_\n\n<think><details><summary>Thought Process</summary>\nLet me look first.\n</details></think>\n\n" +
		"_**Agent (copilot/claude-sonnet-4.5)**_\n\n<tool-use data-tool-type=\"read\" data-tool-name=\"copilot_readFile\">\n<details>\n" +
		"<summary>Tool use: **copilot_readFile** • Reading [`lib/catalog/product.ex`](lib/catalog/product.ex)</summary>\n\n</details>\n</tool-use>\n\n---\n\n" +
		"Here is the plan.\n\n_**Agent (copilot/claude-sonnet-4.5)**_\n\n" +
		"<tool-use data-tool-type=\"generic\" data-tool-name=\"run_in_terminal\"><details>\n<summary>Tool use: **run_in_terminal**</summary>\n\n**Input:**\n\n" +
		"- command: `mix ecto.gen.migration create_purchase_orders`\n- isBackground: `false`\n\n</details></tool-use>\n\n" +
		"_**Agent (copilot/claude-sonnet-4.5)**_\n\n<tool-use data-tool-type=\"generic\" data-tool-name=\"replace_string_in_file\"><details>\n" +
		"<summary>Tool use: **replace_string_in_file**</summary>\n\n**Input:**\n\n- filePath: `/Users/m/shop/priv/a.exs`\n- newString:\n\n```\nnew line\n```\n\n" +
		"- oldString:\n\n```\nold line\n```\n\n</details></tool-use>\n\n" +
		"_**Agent (copilot/claude-sonnet-4.5)**_\n\n<tool-use data-tool-type=\"task\" data-tool-name=\"manage_todo_list\"><details>\n<summary>Tool use: **manage_todo_list**</summary>\n</details></tool-use>\n\nDone.\n"
	turns := parseSpecStory(log, "/home/user/shop")
	if len(turns) != 1 || turns[0].Request != "add purchase orders" {
		t.Fatalf("%+v", turns)
	}
	ms := turns[0].Messages
	want := "assistant read:/home/user/shop/lib/catalog/product.ex | tool | assistant bash:mix ecto.gen.migration create_purchase_orders edit:/Users/m/shop/priv/a.exs managetodolist: | tool | tool | tool | assistant"
	if got := summary(ms); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// The export names the folder it ran in (/Users/m/shop/priv holds
	// its one absolute path): its relative names sit there too.
	if w := ownWorkdir(turns, "/home/user/shop"); w != "/Users/m/shop/priv" {
		t.Errorf("own workdir %q", w)
	}
	if w := ownWorkdir(parseSpecStory(strings.Replace(log, "/Users/m/shop/priv/a.exs", "/Users/a.exs", 1), "/home/user/shop"), "/home/user/shop"); w != "" {
		t.Errorf("a home folder's file: own workdir %q, want none", w)
	}
	edit := gjson.Parse(ms[2].ToolCalls[1].Function.Arguments)
	if ms[0].Content != "" || ms[2].Content != "Here is the plan." || edit.Get("oldString").String() != "old line" || edit.Get("newString").String() != "new line" {
		t.Errorf("texts %q %q, edit %s", ms[0].Content, ms[2].Content, edit.Raw)
	}
}

// TestSpecStory21Providers: v2.1 exports of the SpecStory CLI and the
// Cursor extension keep each tool's arguments their own way; each becomes
// OpenCode's call with its path or command. Shapes of real exports:
// Claude Code (a path or command line in backticks, a fenced command, the
// path in a Write's or an Edit's result, a subagent's messages, a fetched
// URL), Codex (its command in the summary, its patch by file), Cursor (the
// path or command after the summary's "•", each element followed by an
// empty copy of it, a search's Parameters). An unclosed fence in a tool's
// output or in the reasoning does not swallow what follows.
func TestSpecStory21Providers(t *testing.T) {
	el := func(kind, name, summary string, body ...string) string {
		return "<tool-use data-tool-type=\"" + kind + "\" data-tool-name=\"" + name + "\"><details>\n<summary>Tool use: **" + name + "**" + summary + "</summary>\n" +
			strings.Join(body, "\n") + "\n</details></tool-use>\n\n"
	}
	agent := "_**Agent (claude-opus-4-8 2026-07-13 13:41:05Z)**_\n\n"
	log := "<!-- Generated by SpecStory, Markdown v2.1.0 -->\n\n# 2026-07-13 13:33:53Z\n\n_**User (2026-07-13 13:33:53Z)**_\n\nfix the stale PR workflow\n\n---\n\n" +
		agent + "<think><details><summary>Thought Process</summary>\nIt prints ```bash\n</details></think>\n\n" +
		agent + el("read", "Read", "", " `./.github/workflows/update.yml`", "", "```text", "1\tname: update", "```") +
		agent + el("shell", "Bash", "", "List the open PRs", "", "`gh pr list --state open`", "", "```text", "#572 update", "```") +
		agent + el("shell", "Bash", "", "Merge the branch", "", "```bash", "git merge origin/update", "```", "", "```text", "```yaml", "---", "CONFLICT", "```") +
		agent + el("write", "Edit", "", "", "```text", "The file /work/site/.github/workflows/update.yml has been updated successfully.", "```") +
		agent + el("write", "Write", "", "", "```md", "# Plan", "```", "", "```text", "File created successfully at: /work/site/PLAN.md", "```") +
		agent + el("read", "WebFetch", "", " `https://docs.example.com/actions`") +
		"_**Agent - sidechain (2026-07-13 13:42:00Z)**_\n\nSearch the docs for concurrency groups\n\n" + el("search", "Grep", "", " path `./` pattern `concurrency`") +
		agent + "Merged and fixed.\n\n---\n\n_**User (2026-07-13 13:50:00Z)**_\n\nnow the service script\n\n---\n\n" +
		"_**Agent (gpt-5.5 2026-07-13 13:50:10Z)**_\n\n" + el("shell", "exec_command", " `sed -n '1,80p' scripts/service.sh`", "```", "render_plist() {", "```") +
		el("write", "apply_patch", "", "**Update: `scripts/service.sh`**", "", "```diff", "@@", "-old()", "+new()", "```", "**Add: `scripts/start.sh`**", "", "```diff", "+#!/bin/sh", "```") +
		el("unknown", "exec", "", "Input (truncated): ```", `const r = await tools.exec_command({cmd:"Get-Content -Path 'C:\\app\\service.ps1' -Tail 5","`, "...", "```") +
		"---\n\n_**User (2026-07-13 14:00:00Z)**_\n\nand the README\n\n---\n\n_**Agent (default)**_\n\n" +
		el("read", "read_file_v2", " • Read file: /work/site/README.md") + el("read", "read_file_v2", "") +
		el("shell", "run_terminal_command_v2", " • Run command: cd /work/site &amp;&amp; make docs", "```bash", "cd /work/site && make docs", "```") +
		el("unknown", "ripgrep_raw_search", "", "Parameters:", "", "```json", "{\"pattern\": \"workflow_dispatch\", \"path\": \"/work/site\"}", "```") +
		"Done.\n"
	turns := parseSpecStory(log, "/work/site")
	if len(turns) != 3 || turns[0].Request != "fix the stale PR workflow" || turns[1].Request != "now the service script" {
		t.Fatalf("%d turns: %+v", len(turns), turns)
	}
	var got []string
	for _, turn := range turns {
		got = append(got, summary(turn.Messages))
	}
	want := []string{
		"assistant read:/work/site/.github/workflows/update.yml bash:gh pr list --state open bash:git merge origin/update edit:/work/site/.github/workflows/update.yml write:/work/site/PLAN.md WebFetch: | tool | tool | tool | tool | tool | tool | assistant",
		"assistant bash:sed -n '1,80p' scripts/service.sh edit:/work/site/scripts/service.sh write:/work/site/scripts/start.sh bash:Get-Content -Path 'C:\\app\\service.ps1' -Tail 5 | tool | tool | tool | tool",
		"assistant read:/work/site/README.md bash:cd /work/site && make docs grep: | tool | tool | tool | assistant",
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("turn %d:\n got  %s\n want %s", i+1, got[i], want[i])
		}
	}
	ms := turns[0].Messages
	if out := ms[3].Content; out != "```yaml\n---\nCONFLICT" {
		t.Errorf("the merge's output %q", out)
	}
	if strings.Contains(ms[len(ms)-1].Content, "concurrency") || ms[len(ms)-1].Content != "Merged and fixed." {
		t.Errorf("the reply %q: the subagent's messages are the subagent's", ms[len(ms)-1].Content)
	}
	write := gjson.Parse(ms[0].ToolCalls[4].Function.Arguments)
	patch := gjson.Parse(turns[1].Messages[0].ToolCalls[1].Function.Arguments)
	grep := gjson.Parse(turns[2].Messages[0].ToolCalls[2].Function.Arguments)
	if write.Get("content").String() != "# Plan" || patch.Get("oldString").String() != "old()\n" || patch.Get("newString").String() != "new()\n" || grep.Get("pattern").String() != "workflow_dispatch" {
		t.Errorf("write %s, patch %s, grep %s", write.Raw, patch.Raw, grep.Raw)
	}
}

func TestClaudeCodeLog(t *testing.T) {
	dir := t.TempDir()
	log := `{"type":"summary","summary":"Fix login"}
{"type":"user","cwd":"/home/ana/shop","message":{"role":"user","content":"fix the login redirect"}}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Reading it."}]}}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/home/ana/shop/login.ts"}}]}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"export {}"}]}}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Fixed."}]}}
{"type":"user","isMeta":true,"message":{"role":"user","content":[{"type":"text","text":"<command-name>/clear</command-name>"}]}}
not json
{"type":"user","message":{"role":"user","content":[{"type":"image","source":{}},{"type":"text","text":"and this page"}]}}
`
	f := filepath.Join(dir, "5e1c.jsonl")
	if err := os.WriteFile(f, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	ss, skips, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The line that is not JSON is left out, the rest of the log read.
	if len(skips) != 1 || skips[0].Source != f || skips[0].Record != "line 8" {
		t.Errorf("skips %v, want line 8 of %s", skips, f)
	}
	s := ss[0]
	if len(ss) != 1 || s.Name != "5e1c" || s.Format != FormatClaudeCode || s.Workdir != "/home/ana/shop" || s.Labels != nil {
		t.Fatalf("%+v", ss)
	}
	var reqs []string
	for _, turn := range s.Turns {
		reqs = append(reqs, turn.Request)
	}
	if strings.Join(reqs, "|") != "fix the login redirect|<command-name>/clear</command-name>|and this page" {
		t.Errorf("requests %q", reqs)
	}
	if got := summary(s.Turns[0].Messages); got != "assistant read:/home/ana/shop/login.ts | tool | assistant" {
		t.Errorf("turn 1: %s", got)
	}
	if calls := s.Lay("sys").Calls; len(calls) != 4 || calls[2].Response.Role != "" {
		t.Errorf("%d calls", len(calls))
	}
}

// TestCodexLog: a rollout among Claude Code logs is told from them by its
// session_meta line; subagents' lines and logs are not the person's.
func TestCodexLog(t *testing.T) {
	dir := t.TempDir()
	logs := map[string]string{
		"rollout-2025-10-29T00-59-38-019a.jsonl": `{"type":"session_meta","payload":{"id":"019a","cwd":"/home/eve/shop"}}` + "\n" +
			`{"type":"event_msg","payload":{"type":"user_message","message":"run the tests"}}` + "\n" +
			`{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"go test ./...\"]}","call_id":"c1"}}` + "\n" +
			`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"ok"}}` + "\n",
		"5e1c.jsonl": `{"type":"user","cwd":"/home/ana/app","message":{"role":"user","content":"hi"}}` + "\n" +
			`{"type":"user","isSidechain":true,"message":{"role":"user","content":"search the repo for x"}}` + "\n",
		// A subagent's own log (Claude Code 2): no session of its own.
		"agent-7f3a.jsonl": `{"type":"user","isSidechain":true,"cwd":"/home/ana/app","message":{"role":"user","content":"search the repo for x"}}` + "\n",
		// Codex before September 2025: bare items, no user_message event.
		"rollout-2025-08-02T10-00-00-77aa.jsonl": `{"id":"77aa","timestamp":"2025-08-02T10:00:00.000Z","instructions":null}` + "\n" +
			`{"record_type":"state"}` + "\n" +
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/home/eve/blog</cwd>\n</environment_context>"}]}` + "\n" +
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"list the drafts"}]}` + "\n" +
			`{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\",\"drafts\"]}","call_id":"c1"}` + "\n" +
			`{"type":"function_call_output","call_id":"c1","output":"a.md"}` + "\n",
	}
	for name, s := range logs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ss, skips, err := Read(dir)
	if err != nil || len(skips) > 0 || len(ss) != 3 {
		t.Fatalf("%+v, %v", ss, err)
	}
	if b := ss[1]; b.Format != FormatCodex || b.Workdir != "/home/eve/blog" || len(b.Turns) != 1 || b.Turns[0].Request != "list the drafts" ||
		summary(b.Turns[0].Messages) != "assistant bash:ls drafts | tool" {
		t.Errorf("bare rollout: %+v", b)
	}
	// A folder of logs with no request says so, not that it holds none.
	if _, _, err := Read(filepath.Join(dir, "agent-7f3a.jsonl")); err == nil || !strings.Contains(err.Error(), "not one request") {
		t.Errorf("a subagent's log alone: %v", err)
	}
	c := ss[2]
	if ss[0].Format != FormatClaudeCode || len(ss[0].Turns) != 1 || c.Format != FormatCodex || c.Name != "rollout-2025-10-29T00-59-38-019a" || c.Workdir != "/home/eve/shop" ||
		len(c.Turns) != 1 || summary(c.Turns[0].Messages) != "assistant bash:go test ./... | tool" {
		t.Errorf("%+v", ss)
	}
}

// TestTag: a person naming tasks tags the new tasks that stand apart and,
// when asked, the returns; nothing else, and nothing in an unlabelled log.
func TestTag(t *testing.T) {
	labelled := func() Session {
		s := Session{Labels: []Label{
			{Task: "T1", Kind: KindNew},
			{Task: "T1", Kind: KindContinue, Needs: []string{"T1"}},
			{Task: "T2", Kind: KindNew, Needs: []string{"T1"}},
			{Task: "T3", Kind: KindNew},
			{Task: "T1", Kind: KindReturn, Needs: []string{"T1"}},
			{Task: "T1", Kind: KindMeta},
		}}
		for _, r := range []string{"add a login form", "and a logout link", "reuse it on the admin page", "fix the CSV export", "back to the login form", "/undo"} {
			s.Turns = append(s.Turns, chat.Turn{Request: r})
		}
		return s
	}
	requests := func(s Session) string {
		var rs []string
		for _, turn := range s.Turns {
			rs = append(rs, turn.Request)
		}
		return strings.Join(rs, "|")
	}
	for _, c := range []struct {
		kinds []string
		n     int
		want  string
	}{
		{[]string{KindNew}, 2, "[task: T1] add a login form|and a logout link|reuse it on the admin page|[task: T3] fix the CSV export|back to the login form|/undo"},
		{[]string{KindNew, KindReturn}, 3, "[task: T1] add a login form|and a logout link|reuse it on the admin page|[task: T3] fix the CSV export|[task: T1] back to the login form|/undo"},
		{nil, 0, "add a login form|and a logout link|reuse it on the admin page|fix the CSV export|back to the login form|/undo"},
	} {
		s := labelled()
		if n := s.Tag(c.kinds...); n != c.n || requests(s) != c.want {
			t.Errorf("%v: %d tagged: %s", c.kinds, n, requests(s))
		}
	}
	s := labelled()
	s.Labels = nil
	if n := s.Tag(KindNew, KindReturn); n != 0 || !strings.HasPrefix(requests(s), "add a login form|") {
		t.Errorf("unlabelled: %d tagged: %s", n, requests(s))
	}
}

// corpusDir makes a corpus folder (raw/ and labels/) and returns it with
// a function writing a file into it.
func corpusDir(t *testing.T) (string, func(name, s string)) {
	dir := t.TempDir()
	for _, d := range []string{"raw", "labels"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLabelMismatch: a label file that disagrees with the parse leaves its
// session out, named with the turn, and the other sessions are read; a
// single log whose labels disagree is an error.
func TestLabelMismatch(t *testing.T) {
	dir, write := corpusDir(t)
	log := "# aider chat started at 2025-01-01 10:00:00\n\n#### add a test  \n\nDone.\n\n#### and docs  \n\nDone.\n"
	write("raw/021.md", log)
	write("raw/022.md", log)
	label := `{"source":{"repo":"eve/app","format":"aider"},"turns":[{"user_prefix":"add a test","task":"T1","kind":"new","needs":[]},{"user_prefix":%s,"task":"T1","kind":"continue","needs":["T1"]}]}`
	write("labels/021.json", fmt.Sprintf(label, `"and docs"`))
	write("labels/022.json", fmt.Sprintf(label, `"and docs"`))
	ss, skips, err := Read(dir)
	if err != nil || len(skips) > 0 || len(ss) != 2 || ss[0].Workdir != "/home/user/app" || ss[0].Repo != "eve/app" || ss[0].Labels[1].Needs[0] != "T1" {
		t.Fatalf("%+v, %v, %v", ss, skips, err)
	}
	for _, c := range []struct{ label, want string }{
		{fmt.Sprintf(label, `"and the docs"`), "session 021: turn 2"},
		{`{"source":{"format":"aider"},"turns":[{"user_prefix":"add a test"}]}`, "session 021: 2 user messages parsed, 1 labelled"},
		{`{"turns":[`, "labels/021.json"},
	} {
		write("labels/021.json", c.label)
		ss, skips, err := Read(dir)
		if err != nil || len(ss) != 1 || ss[0].Name != "022" || len(skips) != 1 || skips[0].Record != "labels" ||
			skips[0].Source != filepath.Join(dir, "raw", "021.md") || !strings.Contains(skips[0].Reason, c.want) {
			t.Errorf("%s: sessions %d, skips %v, %v; want 022 read and 021 left out for %q", c.label, len(ss), skips, err, c.want)
		}
		if _, _, err := Read(filepath.Join(dir, "raw", "021.md")); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s alone: %v, want an error naming %q", c.label, err, c.want)
		}
	}
}

// TestQuotes: a label's prefix quotes its message whatever the labeller
// made of line ends and runs of spaces, and nothing else.
func TestQuotes(t *testing.T) {
	long := "The MVP is:\r\nAmazon Cloud based\r\nWeb form to upload video from a phone and a laptop"
	for _, c := range []struct {
		prefix, request string
		want            bool
	}{
		{"and docs", "and docs", true},
		{"and docs", "and the docs", false},
		{"and docs", "and docs too", false}, // short: the whole message
		{"", "", true},
		{"", "x", false},
		{Prefix(long), long, true}, // cut inside a word
		{"The MVP is:\nAmazon Cloud based\nWeb form to upload video from", long, true}, // read with universal newlines
		{"The MVP is:\nAmazon Cloud based\nWeb form to upload audio from", long, false},
		{"Fix it  \nplease", "Fix it\nplease", true}, // aider's trailing spaces
		{"\u00e9t\u00e9", "e\u0301te\u0301", false},
	} {
		if got := quotes(c.prefix, c.request); got != c.want {
			t.Errorf("quotes(%q, %q) = %v, want %v", c.prefix, c.request, got, c.want)
		}
	}
}

// TestLabelLineEnds: a CRLF log is read with labels that quote its
// messages with LF line ends, and the other way round; a label's format
// that names none of ours leaves the log's own.
func TestLabelLineEnds(t *testing.T) {
	for _, c := range []struct{ log, prefix, format string }{
		{"_**User**_\r\n\r\nWeird\r\n\r\nline two\r\n\r\n---\r\n\r\n_**Assistant**_\r\n\r\nok\r\n", "Weird\n\nline two", "specstory"},
		{"_**User**_\n\nWeird\n\nline two\n\n---\n\n_**Assistant**_\n\nok\n", "Weird\r\n\r\nline two", "cursor"},
	} {
		dir, write := corpusDir(t)
		write("raw/031.md", "<!-- Generated by SpecStory -->\n\n"+c.log)
		b, _ := json.Marshal(c.prefix)
		write("labels/031.json", `{"source":{"repo":"eve/app","format":"`+c.format+`"},"turns":[{"user_prefix":`+string(b)+`,"task":"T1","kind":"new","needs":[]}]}`)
		ss, skips, err := Read(dir)
		if err != nil || len(skips) > 0 || len(ss) != 1 || len(ss[0].Labels) != 1 {
			t.Errorf("%q: %+v, %v, %v", c.prefix, ss, skips, err)
		}
	}
}

// TestAiderClear: aider's /clear and /reset start its chat over, so the
// turns after one are a conversation of their own, with labels rebased to
// what that conversation holds; a clear before any chat, and one aider
// refused, cut nothing.
func TestAiderClear(t *testing.T) {
	dir, write := corpusDir(t)
	write("raw/031.md", "# aider chat started at 2025-03-01 09:00:00\n\n"+
		"#### /reset  \n\n"+ // nothing to forget yet
		"#### make the invoice total include VAT  \n\nDone.\n\n"+
		"#### now add a CSV export of the orders  \n\nDone.\n\n"+
		"#### /cl  \n\n> Ambiguous command: /clear, /clipboard  \n\n"+ // refused: no cut
		"#### and sort it by date  \n\nDone.\n\n"+
		"#### /clear  \n\n#### /clear  \n\n"+ // one cut
		"#### /tokens  \n\n> $ 0.0001      350 system messages  \n\n"+
		"#### the VAT total is wrong for zero-rated items, fix it  \n\nDone.\n\n"+
		"#### /res  \n\n"+
		"#### rename the export button  \n\nDone.\n")
	labels := `{"source":{"repo":"eve/shop","format":"aider"},"turns":[` +
		`{"user_prefix":"/reset","task":"T1","kind":"meta","needs":[]},` +
		`{"user_prefix":"make the invoice total include VAT","task":"T1","kind":"new","needs":[]},` +
		`{"user_prefix":"now add a CSV export of the orders","task":"T2","kind":"new","needs":[]},` +
		`{"user_prefix":"/cl","task":"T2","kind":"meta","needs":[]},` +
		`{"user_prefix":"and sort it by date","task":"T2","kind":"continue","needs":["T2"]},` +
		`{"user_prefix":"/clear","task":"T2","kind":"meta","needs":[]},` +
		`{"user_prefix":"/clear","task":"T2","kind":"meta","needs":[]},` +
		`{"user_prefix":"/tokens","task":"T2","kind":"meta","needs":[]},` +
		`{"user_prefix":"the VAT total is wrong for zero-rated items, fix it","task":"T1","kind":"return","needs":["T1"]},` +
		`{"user_prefix":"/res","task":"T1","kind":"meta","needs":[]},` +
		`{"user_prefix":"rename the export button","task":"T2","kind":"return","needs":["T2","T1"]}]}`
	write("labels/031.json", labels)
	ss, skips, err := Read(dir)
	if err != nil || len(skips) > 0 {
		t.Fatal(err, skips)
	}
	got := []string{}
	for _, s := range ss {
		var ks []string
		for i, l := range s.Labels {
			ks = append(ks, fmt.Sprintf("%s %s %s %v", Prefix(s.Turns[i].Request), l.Task, l.Kind, l.Needs))
		}
		if s.Path != filepath.Join(dir, "raw", "031.md") || s.Repo != "eve/shop" || s.Workdir != "/home/user/shop" {
			t.Errorf("%s: path %s, repo %s, workdir %s", s.Name, s.Path, s.Repo, s.Workdir)
		}
		got = append(got, s.Name+": "+strings.Join(ks, "; "))
	}
	want := []string{
		"031: /reset T1 meta []; make the invoice total include VAT T1 new []; now add a CSV export of the orders T2 new []; " +
			"/cl T2 meta []; and sort it by date T2 continue [T2]; /clear T2 meta []; /clear T2 meta []",
		"031.2: /tokens T2 meta []; the VAT total is wrong for zero-rated items, fix it T1 new []; /res T1 meta []",
		"031.3: rename the export button T2 new []",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The replay of a later conversation opens with its own first request.
	if c := ss[1].Lay("system").Calls; len(c[0].Messages) != 2 || c[0].Messages[1].Content != "/tokens" {
		t.Errorf("031.2's first call: %+v", c[0].Messages)
	}
	// Without labels the same cuts are made.
	if err := os.Remove(filepath.Join(dir, "labels", "031.json")); err != nil {
		t.Fatal(err)
	}
	if ss, _, err := Read(filepath.Join(dir, "raw", "031.md")); err != nil || len(ss) != 3 || ss[2].Name != "031.3" || ss[2].Labels != nil {
		t.Errorf("unlabelled: %d sessions, %v", len(ss), err)
	}
}

// FuzzAiderCleared: the parts of an aider session are the session cut at
// user lines, and parse into its turns.
func FuzzAiderCleared(f *testing.F) {
	for _, s := range []string{"#### a  \n#### /clear  \n#### b  \n", "#### /clear  \n#### /clear  \nx\n#### c  \r\n", "#### a  \n#### /re  \n> Ambiguous command: /reset, /report  \n#### b  \n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		parts := aiderCleared(text)
		if strings.Join(parts, "") != text {
			t.Fatalf("parts %q do not make up %q", parts, text)
		}
		n := 0
		for i, p := range parts {
			if i > 0 && !aiderUser(strings.TrimRight(p[:strings.IndexByte(p+"\n", '\n')], "\r")) {
				t.Fatalf("part %d opens with no user line: %q", i, p)
			}
			n += len(parseAider(p, "/w"))
		}
		if whole := len(parseAider(text, "/w")); n != whole {
			t.Fatalf("%d turns in the parts, %d in the whole", n, whole)
		}
	})
}

// fuzzParse checks a parser never panics, stays bounded (no more turns
// than the input has lines, at most two messages a line: a call and its
// result), and pairs every tool call with its result.
func fuzzParse(f *testing.F, parse func(text, workdir string) []chat.Turn, seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		turns := parse(text, "/home/user/project")
		lines, messages := strings.Count(text, "\n")+1, 0
		for i, turn := range turns {
			if err := trajectory.ValidateMessages(turn.Messages); err != nil {
				t.Fatalf("turn %d: %v", i, err)
			}
			messages += len(turn.Messages)
		}
		if len(turns) > lines || messages > 2*lines {
			t.Fatalf("%d turns and %d messages from %d lines", len(turns), messages, lines)
		}
	})
}

func FuzzAider(f *testing.F) {
	fuzzParse(f, parseAider, "#### a  \n```\n<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\n```\n> Running ls  \n",
		"#### x  \nf.py\n```\n<<<<<<< SEARCH\na\n=======\nb\n", "####  \n> Applied edit to a  \na\n```\n", "# aider chat started at\n#### \n")
}

func FuzzSpecStory(f *testing.F) {
	fuzzParse(f, parseSpecStory, "_**User**_\nhi\n---\n_**Assistant**_\nTool use: **run_terminal_cmd**\n```bash\nls\n```\n",
		"_**User (x)**_\n_**Agent (m, mode Agent)**_\n<details><summary>Edit file: a</summary>\n```diff\n-\n+x\n```\n---\nRead file: b\n",
		"_**User**_\n---\n_****_\nTool use: **grep**\n<summary>Grep for \"x\" in y</summary>\n",
		"_**User**_\nx\n_**Agent (m)**_\n<think>\n_**Agent (m)**_\n<tool-use data-tool-type=\"write\" data-tool-name=\"create_file\">\n- filePath: `a`\n- content:\n```\nx\n```\n</tool-use>\n",
		"_**User (d)**_\nx\n_**Agent (m d)**_\n<tool-use data-tool-type=\"shell\" data-tool-name=\"Bash\"><details>\n<summary>Tool use: **Bash** • Run command: a &amp; b</summary>\nd\n```bash\nls\n```\n```text\n```\n</details></tool-use>\n"+
			"_**Agent - sidechain (d)**_\np\n<tool-use data-tool-type=\"write\" data-tool-name=\"apply_patch\"><details>\n**Update: `f`**\n```diff\n-a\n+b\n```\nParameters:\n```json\n{\"pattern\":\"x\"}\n```\n</details></tool-use>\n")
}
