package memory

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/transcript"
)

// sseReply is a chat.completion.chunk stream as OpenAI-compatible servers
// send it, with the text and each tool call's arguments cut in pieces.
func sseReply(text string, calls ...transcript.ToolCall) []byte {
	var b strings.Builder
	chunk := func(delta any) {
		j, _ := json.Marshal(map[string]any{"object": "chat.completion.chunk",
			"choices": []any{map[string]any{"index": 0, "delta": delta}}})
		b.WriteString("data: " + string(j) + "\n\n")
	}
	chunk(map[string]any{"role": "assistant"})
	for len(text) > 0 {
		n := min(5, len(text))
		chunk(map[string]any{"content": text[:n]})
		text = text[n:]
	}
	for i, c := range calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}})
		for a := c.Arguments; len(a) > 0; {
			n := min(7, len(a))
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": a[:n]}}}})
			a = a[n:]
		}
	}
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

func TestObserveOpenCodeCaptures(t *testing.T) {
	var r Record
	// The call after OpenCode's bash tool ran; the model answers "done".
	tr := chattest.Parse(t, capture.Body(t, "tool_result_request"))
	r.Observe(Observation{Transcript: tr, Turns: []int{0}, Response: sseReply("done"), SSE: true, Status: 200})
	// The next request of the session (the same task).
	tr = chattest.Parse(t, capture.Body(t, "continue_request"))
	obs := Observation{Transcript: tr, Turns: []int{0, 1}, Response: sseReply("Here is my answer."), SSE: true, Status: 200}
	r.Observe(obs)

	wantReqs := []string{`"List the files here using a tool"`, `"Second message: NOTOOL please just answer"`}
	if got := reqTexts(r); !slices.Equal(got, wantReqs) {
		t.Errorf("requirements %q, want %q", got, wantReqs)
	}
	if r.Requirements[1].Amends {
		t.Error("second request marked as an amendment")
	}
	fps := tr.Fingerprints()
	if r.Requirements[0].Turn != fps[0].String() || r.Requirements[1].Turn != fps[1].String() {
		t.Error("requirements do not carry their turns' fingerprints")
	}
	wantCmds := []Command{{Cmd: "echo hello-from-tool && pwd"}}
	if !reflect.DeepEqual(r.Commands, wantCmds) {
		t.Errorf("commands %+v, want %+v", r.Commands, wantCmds)
	}
	if want := []string{"done", "Here is my answer."}; !slices.Equal(r.Progress, want) {
		t.Errorf("progress %q, want %q", r.Progress, want)
	}
	before := cloneRecord(t, r)
	r.Observe(obs)
	if !reflect.DeepEqual(r, before) {
		t.Errorf("observing the same call twice changed the record:\n%+v\n%+v", before, r)
	}
}

func TestObserveIgnoresSideCalls(t *testing.T) {
	for _, name := range []string{"title_request", "compaction_manual_request"} {
		var r Record
		tr := chattest.Parse(t, capture.Body(t, name))
		r.Observe(Observation{Transcript: tr, Turns: allTurns(tr), Response: sseReply("x"), SSE: true})
		if !reflect.DeepEqual(r, Record{}) {
			t.Errorf("%s: record %+v, want it untouched", name, r)
		}
	}
}

func reqTexts(r Record) []string {
	var out []string
	for _, q := range r.Requirements {
		out = append(out, q.Text)
	}
	return out
}

func cloneRecord(t testing.TB, r Record) Record {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var c Record
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestObserveTrajectory replays a real mini-swe-agent run (converted to
// OpenCode's bash tool calls) call by call, with an amending request added
// halfway, and checks the record after every call.
func TestObserveTrajectory(t *testing.T) {
	traj := miniSWE(t, "django__django-11099")
	orig := traj.Turns[0]
	half := len(orig.Messages) / 2
	for half < len(orig.Messages) && orig.Messages[half].Role != chat.RoleAssistant {
		half++
	}
	amend := "Actually, also keep the old regex working for usernames without a newline; don't touch the admin."
	traj.Turns = []chat.Turn{
		{Request: orig.Request, Messages: orig.Messages[:half]},
		{Request: amend, Messages: orig.Messages[half:]},
	}
	bodies, replies := sessionCalls(t, traj)
	var r Record
	prev := 0
	for i, body := range bodies {
		tr := chattest.Parse(t, body)
		obs := Observation{Transcript: tr, Turns: allTurns(tr), Response: replies[i], Status: 200}
		r.Observe(obs)
		again := cloneRecord(t, r)
		again.Observe(obs)
		if string(mustJSON(t, again)) != string(mustJSON(t, r)) {
			t.Fatalf("call %d: observing twice changed the record", i)
		}
		size := len(mustJSON(t, r))
		if grow := size - prev; grow > 4<<10 {
			t.Errorf("call %d: record grew by %d bytes", i, grow)
		}
		t.Logf("call %2d: record %5d bytes, %d commands", i, size, len(r.Commands))
		prev = size
	}

	if got, want := reqTexts(r), []string{orig.Request, amend}; !slices.Equal(got, want) {
		t.Fatalf("requirements %q, want %q", got, want)
	}
	if r.Requirements[0].Amends || !r.Requirements[1].Amends {
		t.Errorf("amends flags %v %v, want false true", r.Requirements[0].Amends, r.Requirements[1].Amends)
	}
	if r.Workspace != "/testbed" {
		t.Errorf("workspace %q, want /testbed", r.Workspace)
	}
	for _, f := range []string{"/testbed/django/contrib/auth/validators.py", "/testbed/reproduce_issue.py", "/testbed/test_valid_usernames.py"} {
		if !slices.Contains(r.FilesChanged, f) {
			t.Errorf("files changed %q lack %s", r.FilesChanged, f)
		}
	}
	for _, f := range []string{"/testbed/django/contrib/admin/sites.py", "/testbed/django/core/validators.py"} {
		if !slices.Contains(r.FilesRead, f) {
			t.Errorf("files read %q lack %s", r.FilesRead, f)
		}
	}
	if slices.Contains(r.FilesRead, "/testbed/django/contrib/auth/validators.py") {
		t.Error("a changed file is also listed as read")
	}
	// The importer appends "exit code: N" to failed commands only.
	var failedGrep bool
	for _, c := range r.Commands {
		if strings.HasPrefix(c.Cmd, "grep -r") && c.Exit != nil && *c.Exit == 1 {
			failedGrep = true
		}
	}
	if !failedGrep {
		t.Errorf("no grep -r with exit 1 among %+v", r.Commands)
	}
	if r.LastTest == nil || r.LastTest.Cmd != "python3 ./tests/runtests.py auth_tests.test_validators" ||
		!strings.HasPrefix(r.LastTest.Outcome, "passed") {
		t.Errorf("last test %+v, want runtests.py passed", r.LastTest)
	}
	if len(r.Commands) > maxCommands {
		t.Errorf("%d commands kept, bound %d", len(r.Commands), maxCommands)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestObserveOpenCodeTools(t *testing.T) {
	ws := "/work/ws3"
	todos := []map[string]string{
		{"content": "Reproduce the bug", "status": "completed", "priority": "high", "id": "1"},
		{"content": "Fix the parser", "status": "in_progress", "priority": "high", "id": "2"},
		{"content": "Add a regression test", "status": "pending", "priority": "medium", "id": "3"},
		{"content": "Rewrite the docs", "status": "cancelled", "priority": "low", "id": "4"},
	}
	ms := []chat.Message{
		{Role: "user", Content: "Fix the crash in the YAML parser of ws3."},
		{Role: "assistant", ToolCalls: []chat.ToolCall{
			chattest.Call("c1", "read", map[string]any{"filePath": ws + "/pkg/parse.py"}),
			chattest.Call("c2", "bash", map[string]any{"command": "cd " + ws + " && python -m pytest tests/test_parse.py -q", "workdir": ws}),
		}},
		{Role: "tool", ToolCallID: "c1", Content: "1: import yaml"},
		{Role: "tool", ToolCallID: "c2", Content: "F.\n=================== 1 failed, 1 passed in 0.12s ===================\n"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{
			chattest.Call("c1", "edit", map[string]any{"filePath": ws + "/pkg/parse.py", "oldString": "a", "newString": "b"}),
			chattest.Call("c3", "write", map[string]any{"filePath": ws + "/tests/test_crash.py", "content": "def test(): pass\n"}),
			chattest.Call("c4", "apply_patch", map[string]any{"patchText": "*** Begin Patch\n*** Update File: pkg/util.py\n@@\n-a\n+b\n*** End Patch"}),
		}},
		// Tool-call ids repeat: c1 here answers the edit, not the read.
		{Role: "tool", ToolCallID: "c1", Content: "Edit applied successfully."},
		{Role: "tool", ToolCallID: "c3", Content: "Wrote file successfully."},
		{Role: "tool", ToolCallID: "c4", Content: "Success."},
	}
	tr := chattest.Parse(t, chattest.OpenCodeBody(t, ms...))
	reply := sseReply("", transcript.ToolCall{ID: "c5", Name: "todowrite", Arguments: string(mustJSON(t, map[string]any{"todos": todos}))})
	var r Record
	r.Observe(Observation{Transcript: tr, Turns: []int{0}, Response: reply, SSE: true, Status: 200})

	if r.Workspace != ws {
		t.Errorf("workspace %q, want %s", r.Workspace, ws)
	}
	wantChanged := []string{ws + "/pkg/parse.py", ws + "/pkg/util.py", ws + "/tests/test_crash.py"}
	if !slices.Equal(r.FilesChanged, wantChanged) {
		t.Errorf("files changed %q, want %q", r.FilesChanged, wantChanged)
	}
	if len(r.FilesRead) != 0 {
		t.Errorf("files read %q, want none (the one read was changed)", r.FilesRead)
	}
	if r.LastTest == nil || r.LastTest.Outcome != "failed (1 failed, 1 passed)" {
		t.Errorf("last test %+v", r.LastTest)
	}
	if want := []string{"Fix the parser (in progress)", "Add a regression test"}; !slices.Equal(r.Unfinished, want) {
		t.Errorf("unfinished %q, want %q", r.Unfinished, want)
	}
	if want := []string{"done: Reproduce the bug"}; !slices.Equal(r.Progress, want) {
		t.Errorf("progress %q, want %q", r.Progress, want)
	}

	// The next call of the turn: the todo list now has the fix done, the
	// model closes the turn. Todo progress is replaced, not repeated.
	todos[1]["status"] = "completed"
	ms = append(ms,
		chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{chattest.Call("c5", "todowrite", map[string]any{"todos": todos[:2]})}},
		chat.Message{Role: "tool", ToolCallID: "c5", Content: "ok"})
	tr = chattest.Parse(t, chattest.OpenCodeBody(t, ms...))
	r.Observe(Observation{Transcript: tr, Turns: []int{0}, Response: sseReply("Fixed the parser; the test is still to write."), SSE: true, Status: 200})
	if len(r.Unfinished) != 0 {
		t.Errorf("unfinished %q, want none", r.Unfinished)
	}
	want := []string{"done: Reproduce the bug", "done: Fix the parser", "Fixed the parser; the test is still to write."}
	if !slices.Equal(r.Progress, want) {
		t.Errorf("progress %q, want %q", r.Progress, want)
	}
	if len(r.Commands) != 1 {
		t.Errorf("commands %+v, want the one pytest", r.Commands)
	}
}

func TestObserveFailedResponseIgnored(t *testing.T) {
	tr := chattest.Parse(t, capture.Body(t, "tool_result_request"))
	var r Record
	r.Observe(Observation{Transcript: tr, Turns: []int{0}, Response: []byte(`{"error":{"message":"x"}}`), Status: 500})
	r.Observe(Observation{Transcript: tr, Turns: []int{0}, Response: sseReply("done"), SSE: true, Status: 502})
	if len(r.Progress) != 0 {
		t.Errorf("progress %q from a failed answer", r.Progress)
	}
	if len(r.Requirements) != 1 {
		t.Errorf("requirements %+v", r.Requirements)
	}
}

func TestObserveBadTurns(t *testing.T) {
	tr := chattest.Parse(t, capture.Body(t, "continue_request"))
	for _, turns := range [][]int{nil, {5}, {-1}, {1, 0}, {0, 0, 1}} {
		var r Record
		r.Observe(Observation{Transcript: tr, Turns: turns})
	}
	var r Record
	r.Observe(Observation{Turns: []int{0}})
}

func TestAmends(t *testing.T) {
	for text, want := range map[string]bool{
		"Actually, use a flag instead.":              true,
		"Also handle empty input":                    true,
		"Change of plan: keep the old API":           true,
		"Update: the bug also affects 3.x":           true,
		"No, the other file":                         true,
		"Correction - the limit is 10":               true,
		"Please use tabs instead of spaces":          true,
		"Fix the crash in the parser":                false,
		"Nothing else changes; add a test for this.": false,
		"The noble gases table is wrong":             false,
	} {
		if got := amends(text); got != want {
			t.Errorf("amends(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestBashEffects(t *testing.T) {
	for _, c := range []struct {
		cmd, cwd      string
		read, changed []string
		dirs          []string
	}{
		{cmd: "cat ./django/contrib/auth/validators.py", cwd: "/testbed", read: []string{"/testbed/django/contrib/auth/validators.py"}},
		{cmd: "nl -ba src/a.py | sed -n '10,20p'", cwd: "/w", read: []string{"/w/src/a.py"}},
		{cmd: "grep -n \"def foo\" a.py b.py", read: []string{"a.py", "b.py"}},
		{cmd: "grep -rn foo .", read: nil},
		{cmd: "grep -e foo -A 3 x.py", read: []string{"x.py"}},
		{cmd: "head -n 20 a.txt && tail -5 b.txt", read: []string{"a.txt", "b.txt"}},
		{cmd: "sed -n '1,5p' a.py", read: []string{"a.py"}},
		{cmd: "sed -i 's/a/b/' a.py b.py", cwd: "/r", changed: []string{"/r/a.py", "/r/b.py"}},
		{cmd: "sed -i.bak -e 's/a/b/' a.py", changed: []string{"a.py"}},
		{cmd: "cd /testbed/django && sed -i 's/x/y/' core/v.py", changed: []string{"/testbed/django/core/v.py"}, dirs: []string{"/testbed/django"}},
		{cmd: "echo hi > out.txt 2>&1; echo more >> log.txt 2>/dev/null", cwd: "/w", changed: []string{"/w/out.txt", "/w/log.txt"}},
		{cmd: "python x.py &> run.log", changed: []string{"run.log"}},
		{cmd: "printf x | tee -a a.txt b.txt", changed: []string{"a.txt", "b.txt"}},
		{cmd: "mv a.py b.py && cp c.py d/e.py && rm -f f.py && touch g.py", changed: []string{"a.py", "b.py", "d/e.py", "f.py", "g.py"}},
		{cmd: "cat <<'EOF' > /testbed/repro.py\nimport os\nprint('> not a redirect')\nEOF\npython3 /testbed/repro.py", changed: []string{"/testbed/repro.py"}},
		{cmd: "git apply <<'PATCH'\n--- a/src/m.py\n+++ b/src/m.py\n@@\n-x\n+y\nPATCH", cwd: "/w", changed: []string{"/w/src/m.py", "/w/src/m.py"}},
		{cmd: "patch -p1 <<EOF\n--- a/x.c\n+++ b/x.c\nEOF", changed: []string{"x.c", "x.c"}},
		{cmd: `python -c "s=open('a.py').read(); open('a.py','w').write(s.replace('x','y'))"`, read: []string{"a.py"}, changed: []string{"a.py"}},
		{cmd: "python - <<'PY'\nfrom pathlib import Path\nPath('b.txt').write_text('x')\nPY", changed: []string{"b.txt"}},
		{cmd: "FOO=1 timeout 10 cat 'my file.txt' \"$X\" *.py", read: nil},
		{cmd: "wc -l < input.txt # count > lines", read: []string{"input.txt"}},
		{cmd: "echo $(cat secret.txt) > o.txt", changed: []string{"o.txt"}},
		{cmd: "(cd sub && cat a.py)", cwd: "/w", read: []string{"/w/sub/a.py"}, dirs: []string{"/w/sub"}},
		{cmd: "cat 'unterminated", read: []string{"unterminated"}},
	} {
		e := bashEffects(c.cmd, c.cwd)
		if !slices.Equal(e.read, c.read) || !slices.Equal(e.changed, c.changed) || !slices.Equal(e.dirs, c.dirs) {
			t.Errorf("bashEffects(%q, %q) = read %q changed %q dirs %q, want %q %q %q",
				c.cmd, c.cwd, e.read, e.changed, e.dirs, c.read, c.changed, c.dirs)
		}
	}
}

func TestExitStatus(t *testing.T) {
	for out, want := range map[string]int{
		"<returncode>2</returncode>\n<output>x</output>":       2,
		"boom\nexit code: 1":                                   1,
		"Exit code: 0":                                         0,
		"exit status 3":                                        3,
		"FAIL\nexit status 1\nFAIL\tpkg 0.1s":                  1,
		"Process exited with code 127":                         127,
		strings.Repeat("x", 3*outputWindow) + "\nexit code: 4": 4,
		"EXIT STATUS: 5":                                       5,
		"exit code: 1\nretry\nexit code: 2":                    2, // the last one
		"Ünïcödé line\n(exit code: 7)":                         7,
		"reexit code: 3\nexit code: 6":                         6, // a word's start only
	} {
		got := exitStatus(windows(out))
		if got == nil || *got != want {
			t.Errorf("exitStatus(%.40q) = %v, want %d", out, got, want)
		}
	}
	for _, out := range []string{"", "hello\n", "exited cleanly", strings.Repeat("x", 3*outputWindow),
		"reexit code: 3", "make_exit code: 9", "exit code: 12abc"} {
		if got := exitStatus(windows(out)); got != nil {
			t.Errorf("exitStatus(%.40q) = %d, want nil", out, *got)
		}
	}
}

func TestTestOutcome(t *testing.T) {
	one, zero := 1, 0
	for _, c := range []struct {
		cmd     string
		isTest  bool
		out     string
		exit    *int
		outcome string
	}{
		{"pytest -x tests/", true, "..F\n==== 1 failed, 2 passed in 0.30s ====", &one, "failed (1 failed, 2 passed)"},
		{"python -m pytest -q", true, "=== 5 passed, 1 warning in 1.02s ===\n", nil, "passed (5 passed, 1 warning)"},
		{"cd /testbed && ./tests/runtests.py auth_tests", true, "....\n----------\nRan 4 tests in 0.01s\n\nOK\n", nil, "passed (ran 4)"},
		{"python tests/runtests.py x", true, "Ran 9 tests in 0.2s\n\nFAILED (failures=2)\n", &one, "failed (ran 9 (failures=2))"},
		{"go test ./...", true, "ok  \tpkg/a\t0.1s\nFAIL\tpkg/b\t0.2s\n", &one, "failed"},
		{"go test ./pkg", true, "ok  \tpkg\t0.1s\n", &zero, "passed"},
		{"npm test", true, "", &zero, "passed"},
		{"tox -e py311", true, "", &one, "failed (exit 1)"},
		{"bin/test -v", true, "", nil, "unknown"},
		{"grep pytest setup.cfg", false, "", nil, ""},
		{"cat tests/test_x.py", false, "", nil, ""},
		{"ls", false, "", nil, ""},
	} {
		if got := isTest(c.cmd); got != c.isTest {
			t.Errorf("isTest(%q) = %v", c.cmd, got)
		}
		if !c.isTest {
			continue
		}
		if got := testOutcome(c.out, c.exit, true); got != c.outcome {
			t.Errorf("%s: outcome %q, want %q", c.cmd, got, c.outcome)
		}
	}
	if got := testOutcome("", nil, false); got != "no result yet" {
		t.Errorf("no result: %q", got)
	}
}

// FuzzObserveReply: whatever the upstream answered, observing it never
// panics.
func FuzzObserveReply(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"done\",\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"todowrite\",\"arguments\":\"{\\\"todos\\\":[{\\\"content\\\":\\\"x\\\",\\\"status\\\":\\\"pending\\\"}]}\"}}]}}]}\n\n"), true)
	f.Add([]byte(`{"choices":[{"message":{"content":"ok","tool_calls":[{"function":{"name":"bash","arguments":"{\"command\":\"go test ./...\"}"}}]}}]}`), false)
	f.Fuzz(func(t *testing.T, body []byte, sse bool) {
		tr, err := transcript.Parse(transcript.OpenAIChat, []byte(`{"messages":[{"role":"user","content":"fix it"}]}`), transcript.Hints{})
		if err != nil {
			t.Fatal(err)
		}
		var r Record
		r.Observe(Observation{Transcript: tr, Turns: []int{0}, Response: body, SSE: sse})
	})
}

// TestObserveCodexTools: Codex's commands, run through its code-mode exec
// (JavaScript calling tools.exec_command) or its classic exec_command, and
// its freeform apply_patch, reach the record, from real Codex requests.
func TestObserveCodexTools(t *testing.T) {
	for name, want := range map[string]string{
		"tool_result_request":               "echo hello-from-codex > hi.txt",
		"classic_tools_tool_result_request": "echo classic-tools > m.txt",
	} {
		c := capture.Codex(t, name)
		tr, err := transcript.Parse(transcript.OpenAIResponses, c.Body, transcript.OpenAIResponses.Hints(c.Header))
		if err != nil {
			t.Fatal(err)
		}
		var r Record
		r.Observe(Observation{Transcript: tr, Turns: []int{len(tr.Turns) - 1}})
		if len(r.Commands) != 1 || r.Commands[0].Cmd != want || r.Commands[0].Exit == nil || *r.Commands[0].Exit != 0 {
			t.Errorf("%s: commands %+v, want %q exiting 0", name, r.Commands, want)
		}
	}
	body := `{"input":[{"role":"user","content":"patch it"},` +
		`{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":"*** Begin Patch\n*** Update File: /w/a.go\n@@\n-a\n+b\n*** End Patch"},` +
		`{"type":"custom_tool_call","call_id":"c2","name":"exec","input":"const r = await tools.exec_command({cmd: \"go test ./...\", workdir: \"/w\"});\ntext(r);"},` +
		`{"type":"custom_tool_call_output","call_id":"c2","output":[{"type":"input_text","text":"{\"exit_code\":1,\"output\":\"FAIL\"}"}]}]}`
	tr, err := transcript.Parse(transcript.OpenAIResponses, []byte(body), transcript.Hints{})
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	r.Observe(Observation{Transcript: tr, Turns: []int{0}})
	if !slices.Equal(r.FilesChanged, []string{"/w/a.go"}) || r.LastTest == nil || r.LastTest.Cmd != "go test ./..." || *r.LastTest.Exit != 1 || r.Workspace != "/w" {
		t.Errorf("record %+v", r)
	}
}

// longTurn is one request followed by n bash steps in the same turn; step
// i runs "make step-i" (a pytest run every tenth step) and its output,
// about out bytes, ends with "exit code: i%3".
func longTurn(n, out int) []chat.Message {
	ms := []chat.Message{chattest.System("You are opencode."), chattest.User("Fix the build.")}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		cmd := fmt.Sprintf("make step-%d", i)
		if i%10 == 0 {
			cmd = fmt.Sprintf("pytest -q tests/test_%d.py", i)
		}
		ms = append(ms, chattest.ToolCall(id, "bash", map[string]string{"command": cmd}),
			chattest.ToolResult(id, strings.Repeat("output line\n", out/12)+fmt.Sprintf("exit code: %d\n", i%3)))
	}
	return ms
}

// TestObserveLongTurn: in a turn of more commands than the record keeps,
// every kept command has the exit status of its own result, and the last
// test keeps its outcome even when newer commands pushed it out of the
// list.
func TestObserveLongTurn(t *testing.T) {
	for _, n := range []int{5, maxCommands, maxCommands + 1, 75} {
		for _, out := range []int{100, 3 * outputWindow} {
			t.Run(fmt.Sprintf("%d steps of %d bytes", n, out), func(t *testing.T) {
				tr := chattest.Parse(t, chattest.Body(longTurn(n, out)...))
				var r Record
				r.Observe(Observation{Transcript: tr, Turns: []int{0}})
				if want := min(n, maxCommands); len(r.Commands) != want {
					t.Fatalf("%d commands, want %d", len(r.Commands), want)
				}
				for k, c := range r.Commands {
					i := n - len(r.Commands) + k
					if !strings.HasSuffix(c.Cmd, fmt.Sprintf("-%d", i)) && !strings.HasSuffix(c.Cmd, fmt.Sprintf("_%d.py", i)) {
						t.Fatalf("command %d is %q, want step %d", k, c.Cmd, i)
					}
					if c.Exit == nil || *c.Exit != i%3 {
						t.Errorf("%q: exit %v, want %d", c.Cmd, c.Exit, i%3)
					}
				}
				last := (n - 1) / 10 * 10
				if r.LastTest == nil || r.LastTest.Cmd != fmt.Sprintf("pytest -q tests/test_%d.py", last) ||
					r.LastTest.Exit == nil || *r.LastTest.Exit != last%3 {
					t.Fatalf("last test %+v, want step %d with exit %d", r.LastTest, last, last%3)
				}
			})
		}
	}
}
