package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/bench/run"
	"github.com/rcm-dev/rcm/internal/client/codex"
	"github.com/rcm-dev/rcm/internal/npm/npmtest"
	"github.com/tidwall/gjson"
)

// codexFixture is a scripted Responses model for the fixture's spec,
// driving Codex's exec_command tool (the classic tools Codex offers a model
// it does not know, such as fixture-model): it shows a file to fix with
// cat, edits it with sed once cat's output is back, writes new files with
// printf, runs the tests on a submit, and answers in text once its command
// has run. The checkout comes from the request's own text (the runner
// substitutes it for {checkout}).
type codexFixture struct {
	mu      sync.Mutex
	n       int
	threads map[string]map[string]bool // X-Session-Id: the Codex threads (session-id) seen
	bodies  map[string][][]byte        // X-Session-Id: request bodies
}

func (f *codexFixture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		io.WriteString(w, `{"object": "list", "data": [{"id": "fixture-model", "object": "model"}]}`)
		return
	}
	f.mu.Lock()
	f.n++
	n := f.n
	sid := r.Header.Get("X-Session-Id")
	if f.threads[sid] == nil {
		f.threads[sid] = map[string]bool{}
	}
	f.threads[sid][r.Header.Get("Session-Id")] = true
	f.bodies[sid] = append(f.bodies[sid], body)
	f.mu.Unlock()
	// The request being worked on is the last user text that is not
	// context (Codex's <environment_context>, rcm's <rcm-task-state>); the
	// step is the output of the last command run for it.
	var prompt, output string
	var ran int
	gjson.GetBytes(body, "input").ForEach(func(_, it gjson.Result) bool {
		switch it.Get("type").Str {
		case "function_call_output":
			ran++
			output = it.Get("output").String()
		case "message":
			if it.Get("role").Str != "user" {
				return true
			}
			text := it.Get("content").Str
			if it.Get("content").IsArray() {
				text = it.Get("content.0.text").Str
			}
			if !strings.HasPrefix(strings.TrimSpace(text), "<") {
				prompt, output, ran = text, "", 0
			}
		}
		return true
	})
	dir := ""
	if m := checkoutPath.FindStringSubmatch(prompt); m != nil {
		dir = m[1]
	}
	text, cmd := "OK.", ""
	fix := func(file, sed, fn string) {
		switch {
		case ran == 0:
			cmd = "cat " + filepath.Join(dir, file)
		case strings.Contains(output, fn):
			cmd = "sed -i '" + sed + "' " + filepath.Join(dir, file) + " && echo EDITED"
		default:
			text = "Fixed " + file + "."
		}
	}
	write := func(file, content string) {
		if ran == 0 {
			path := filepath.Join(dir, file)
			cmd = "mkdir -p " + filepath.Dir(path) + " && printf '" + content + "' > " + path
		} else {
			text = "Wrote " + file + "."
		}
	}
	switch {
	case strings.HasPrefix(prompt, "Submit:"):
		if ran == 0 {
			cmd = "cd " + dir + " && go test ./... ; echo SUBMIT-DONE"
		} else {
			text = "Submitted."
		}
	case strings.Contains(prompt, "instead of their sum"):
		fix("calc/add.go", "s/return a - b/return a + b/", "func Add")
	case strings.Contains(prompt, "Shout lowercases"):
		fix("text/shout.go", "s/strings.ToLower(s)/strings.ToUpper(s)/", "func Shout")
	case strings.Contains(prompt, "notes/todo.md"):
		write("notes/todo.md", `# Open items\n\n- fix Add\n`)
	case strings.Contains(prompt, "CHANGELOG.md"):
		write("CHANGELOG.md", `# Changelog\n\n## Unreleased\n`)
	case strings.Contains(prompt, "AUTHORS"):
		write("AUTHORS", `The rcm developers\n`)
	}
	codexStream(w, n, text, cmd)
}

// codexStream answers as a Responses SSE stream: a text message, or one
// exec_command function call. Codex reads the done items and
// response.completed's id and usage.
func codexStream(w http.ResponseWriter, n int, text, cmd string) {
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
		w.(http.Flusher).Flush()
	}
	id := fmt.Sprintf("resp_%04d", n)
	ev(map[string]any{"type": "response.created", "response": map[string]any{"id": id, "object": "response", "status": "in_progress", "output": []any{}}})
	item := map[string]any{"type": "message", "id": fmt.Sprintf("msg_%04d", n), "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	if cmd != "" {
		args, _ := json.Marshal(map[string]string{"cmd": cmd})
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%04d", n), "status": "completed",
			"call_id": fmt.Sprintf("call_%04d", n), "name": "exec_command", "arguments": string(args)}
	}
	ev(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	ev(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	ev(map[string]any{"type": "response.completed", "response": map[string]any{"id": id, "object": "response", "status": "completed",
		"output": []any{item}, "usage": map[string]any{"input_tokens": 1200, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 12, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 1212}}})
}

// TestBenchRunCodex is TestBenchRunClaudeCode with the real Codex CLI
// (`codex exec` from npm) as the harness, over HTTP, against a scripted
// Responses model that fixes the fixture through Codex's exec_command tool:
// every run must be resolved, and every schedule one Codex thread resumed
// turn after turn. The runner itself fails a run whose calls did not carry
// the arm's X-RCM-Threshold (the provider's http_headers).
//
// It skips when npm or its registry cannot be reached, unless CI is set and
// RCM_REQUIRE_CODEX=1, where that fails.
func TestBenchRunCodex(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Codex CLI")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	_, err := codex.Install(ctx, "")
	npmtest.Need(t, "Codex "+codex.Version, "RCM_REQUIRE_CODEX", err)
	shareGoCache(t)
	up := &codexFixture{threads: map[string]map[string]bool{}, bodies: map[string][][]byte{}}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	runs := harnessRuns(t, "codex", srv.URL+"/v1")
	up.mu.Lock()
	defer up.mu.Unlock()
	for _, r := range runs {
		// Every call under the agent's id reached the model from one
		// Codex thread (exec resume kept it), and the meter counted them
		// all, the last one included (Codex exits on its last event).
		if r.Calls != len(up.bodies[r.HarnessS]) {
			t.Errorf("run %s: %d calls counted, %d reached the model", r.Key, r.Calls, len(up.bodies[r.HarnessS]))
		}
		if len(up.threads[r.HarnessS]) != 1 || up.threads[r.HarnessS][""] {
			t.Errorf("run %s: Codex threads %v, want one", r.Key, up.threads[r.HarnessS])
		}
		t.Logf("run %s: %d tokens sent, %d forwarded", r.Key, r.SentTokens, r.ForwardedTokens)
		// Codex runs in the run's folder, which is no git repository (its
		// turn metadata lists no workspace), so each checkout below it is
		// a task of its own: a routing arm forwards the submit of the
		// focus task without the distractors' requests.
		if bodies := up.bodies[r.HarnessS]; r.Condition == run.ConditionSwitch && r.Mode != "native" && len(bodies) > 0 {
			last := bodies[len(bodies)-1]
			if !bytes.Contains(last, []byte("Submit:")) || bytes.Contains(last, []byte("Shout lowercases")) || r.ForwardedTokens >= r.SentTokens {
				t.Errorf("run %s: the last call kept the other tasks (%d tokens sent, %d forwarded)", r.Key, r.SentTokens, r.ForwardedTokens)
			}
		}
	}
	delete(up.threads, "") // GET /v1/models of the upstream check
	if len(up.threads) != 6 {
		t.Errorf("%d Codex sessions reached the model, want 6 (one per run)", len(up.threads))
	}
}
