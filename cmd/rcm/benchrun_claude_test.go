package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/bench/run"
	"github.com/rcm-dev/rcm/internal/client/claudecode"
	"github.com/rcm-dev/rcm/internal/npm/npmtest"
	"github.com/tidwall/gjson"
)

// claudeFixture is a scripted Anthropic Messages model for the fixture's
// spec, driving Claude Code's own tools: it reads a file to fix, then
// edits it (Edit refuses a file not read first), writes new files with
// Write, runs the tests with Bash on a submit, and answers in text once its
// tool has run. The checkout comes from the request's own text (the
// runner substitutes it for {checkout}).
type claudeFixture struct {
	mu       sync.Mutex
	n        int
	sessions map[string]bool // X-Claude-Code-Session-Id seen
}

var checkoutPath = regexp.MustCompile(`(?:^|\s)(/\S+?)[,:]?(?:\s|$)`)

type claudeTool struct {
	name  string
	input map[string]any
}

func (f *claudeFixture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.n++
	id := fmt.Sprintf("msg_%04d", f.n)
	f.sessions[r.Header.Get("X-Claude-Code-Session-Id")] = true
	f.mu.Unlock()
	switch {
	case r.Method == http.MethodGet:
		io.WriteString(w, `{"data": []}`)
		return
	case strings.HasSuffix(r.URL.Path, "/count_tokens"):
		io.WriteString(w, `{"input_tokens": 1000}`)
		return
	}
	// The request being worked on is the last user text that is not a
	// reminder; the step is the last tool the model called for it.
	var prompt, lastTool string
	var sawResult bool
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		switch m.Get("role").String() {
		case "user":
			if c := m.Get("content"); c.Type == gjson.String {
				prompt, lastTool, sawResult = c.String(), "", false
				continue
			}
			for _, b := range m.Get("content").Array() {
				switch t := b.Get("text").String(); {
				case b.Get("type").String() == "tool_result":
					sawResult = true
				case b.Get("type").String() == "text" && !strings.HasPrefix(strings.TrimSpace(t), "<system-reminder>"):
					prompt, lastTool, sawResult = t, "", false
				}
			}
		case "assistant":
			for _, b := range m.Get("content").Array() {
				if b.Get("type").String() == "tool_use" {
					lastTool = b.Get("name").String()
				}
			}
		}
	}
	dir := ""
	if m := checkoutPath.FindStringSubmatch(prompt); m != nil {
		dir = m[1]
	}
	text, tool := "OK.", (*claudeTool)(nil)
	fix := func(file, old, new string) {
		switch {
		case !sawResult:
			tool = &claudeTool{"Read", map[string]any{"file_path": filepath.Join(dir, file)}}
		case lastTool == "Read":
			tool = &claudeTool{"Edit", map[string]any{"file_path": filepath.Join(dir, file), "old_string": old, "new_string": new}}
		default:
			text = "Fixed " + file + "."
		}
	}
	write := func(file, content string) {
		if !sawResult {
			tool = &claudeTool{"Write", map[string]any{"file_path": filepath.Join(dir, file), "content": content}}
		} else {
			text = "Wrote " + file + "."
		}
	}
	switch {
	case strings.HasPrefix(prompt, "Submit:"):
		if !sawResult {
			tool = &claudeTool{"Bash", map[string]any{"command": "cd " + dir + " && go test ./... ; echo SUBMIT-DONE", "description": "Run the tests"}}
		} else {
			text = "Submitted."
		}
	case strings.Contains(prompt, "instead of their sum"):
		fix("calc/add.go", "return a - b", "return a + b")
	case strings.Contains(prompt, "Shout lowercases"):
		fix("text/shout.go", `return strings.ToLower(s) + "!"`, `return strings.ToUpper(s) + "!"`)
	case strings.Contains(prompt, "notes/todo.md"):
		write("notes/todo.md", "# Open items\n\n- fix Add\n")
	case strings.Contains(prompt, "CHANGELOG.md"):
		write("CHANGELOG.md", "# Changelog\n\n## Unreleased\n")
	case strings.Contains(prompt, "AUTHORS"):
		write("AUTHORS", "The rcm developers\n")
	}
	claudeStream(w, id, text, tool)
}

// claudeStream answers as a Messages SSE stream: text, or one tool call.
func claudeStream(w http.ResponseWriter, id, text string, tool *claudeTool) {
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		w.(http.Flusher).Flush()
	}
	ev("message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": "fixture-model",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 1200, "output_tokens": 1}}})
	stop := "end_turn"
	if tool == nil {
		ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
	} else {
		stop = "tool_use"
		in, _ := json.Marshal(tool.input)
		ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": tool.name, "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
	}
	ev("content_block_stop", map[string]any{"index": 0})
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 12}})
	ev("message_stop", map[string]any{})
}

// TestBenchRunClaudeCode is TestBenchRunOpenCode with the real Claude Code
// (`claude -p` from npm) as the harness, against a scripted Messages model
// that fixes the fixture through Claude Code's Read, Edit, Write and Bash
// tools: every run must be resolved and every stage of a schedule one Claude
// Code session. The runner itself fails a run whose calls did not carry the
// arm's X-RCM-Threshold (ANTHROPIC_CUSTOM_HEADERS).
//
// It skips when npm or its registry cannot be reached, unless CI is set and
// RCM_REQUIRE_CLAUDE=1, where that fails.
func TestBenchRunClaudeCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Claude Code client")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	_, err := claudecode.Install(ctx, "")
	npmtest.Need(t, "Claude Code "+claudecode.Version, "RCM_REQUIRE_CLAUDE", err)
	shareGoCache(t)
	up := &claudeFixture{sessions: map[string]bool{}}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	harnessRuns(t, "claude-code", srv.URL)
	up.mu.Lock()
	defer up.mu.Unlock()
	delete(up.sessions, "") // GET /v1/models of the upstream check
	if len(up.sessions) != 6 {
		t.Errorf("%d Claude Code sessions reached the model, want 6 (one per run)", len(up.sessions))
	}
}

// harnessRuns runs `rcm bench run --harness harness` on the fixture against
// upstream (a scripted model that solves it) and checks that every run was
// resolved: both requests answered, every call counted with the
// upstream's usage, the focus patch holding Add's fix and none of the
// distractors' work, and each distractor's request answered and its
// checkout changed. It returns the runs.
func harnessRuns(t *testing.T, harness, upstream string) []run.Result {
	t.Helper()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"--harness", harness, "--spec", filepath.Join(fixture, "spec.json"), "--upstream", upstream, "--model", "fixture-model",
		"--repos", fixtureRepos(t), "--out", out, "--budget", "120s", "--continuations", "1", "--concurrency", "2", "--context", "200000"}
	start := time.Now()
	if err := benchRun(args, &stdout, &stderr); err != nil {
		t.Fatalf("bench run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("bench run in %v: %s", time.Since(start).Round(time.Millisecond), stdout.String())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	})
	runs, err := run.ReadRuns(filepath.Join(out, run.RunsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 6 {
		t.Fatalf("%d runs, want 6 (2 conditions x 3 modes)", len(runs))
	}
	for _, r := range runs {
		if r.Harness != harness || !r.Resolved || !r.Applied || r.FailToPass != (run.TestTally{Passed: 2, Total: 2}) || r.PassToPass.Passed != 2 {
			t.Errorf("run %s (%s): %+v, want resolved with every listed test passing", r.Key, r.Harness, r.Score)
		}
		if r.Requests != 2 || r.Answered != 2 || r.TurnErrors != 0 || r.Timeouts != 0 {
			t.Errorf("run %s: %d of %d requests answered (%d errors, %d timeouts), want 2 of 2", r.Key, r.Answered, r.Requests, r.TurnErrors, r.Timeouts)
		}
		// One session per schedule: the meter counted every call of the
		// run under the one id the harness was started with.
		if r.Calls < 5 || r.UsageCalls != r.Calls || r.PromptTokens <= 0 {
			t.Errorf("run %s: accounting %+v, want every call counted with usage", r.Key, r.Usage)
		}
		t.Logf("run %s: %d calls, %d of %d requests answered", r.Key, r.Calls, r.Answered, r.Requests)
		patch, err := os.ReadFile(filepath.Join(out, "patches", strings.NewReplacer("|", "_", "/", "_").Replace(r.Key)+".diff"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(patch, []byte("+\treturn a + b")) || bytes.Contains(patch, []byte("ToUpper")) || bytes.Contains(patch, []byte("CHANGELOG")) {
			t.Errorf("run %s: focus patch:\n%s", r.Key, patch)
		}
		if r.Condition == run.ConditionSwitch {
			if len(r.Distractors) != 4 || r.Calls <= 5 {
				t.Errorf("run %s: %d distractors, %d calls", r.Key, len(r.Distractors), r.Calls)
			}
			for _, d := range r.Distractors {
				if d.Requests != 1 || d.Answered != 1 || !d.Changed {
					t.Errorf("run %s: distractor %+v, want its request answered and its checkout changed", r.Key, d)
				}
			}
		}
	}
	return runs
}
