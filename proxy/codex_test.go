package proxy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/internal/client/codex"
	"github.com/rcm-dev/rcm/internal/npm/npmtest"
	"github.com/rcm-dev/rcm/internal/scripted"
	"github.com/tidwall/gjson"
)

// codexEnv is a scratch HOME and CODEX_HOME with a config.toml whose
// provider points at base (rcm), and a git checkout with two task folders.
func codexEnv(t *testing.T, base string, ws bool) (env []string, dir string) {
	home := t.TempDir()
	env, err := codex.Env(home, codex.Config{BaseURL: base, WebSocket: ws}, "sk-client")
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(home, "project")
	for _, d := range []string{"alpha", "beta"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git := exec.Command("git", "init", "-q", dir)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	return env, dir
}

// codexRun runs `codex exec ARGS` in dir and fails the test unless Codex
// exits 0 (it accepted every answer).
func codexRun(ctx context.Context, t *testing.T, bin string, env []string, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"exec"}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, nil
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("codex exec %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestCodexThroughRCM runs the real Codex CLI (npm @openai/codex) through
// rcm in each mode, over HTTP and over WebSocket, against the scripted
// Responses API (scripted.Marked): two tagged tasks working in two
// folders, resumed with `exec resume --last`, then an inline compaction
// before the last turn.
// Codex must accept every answer (exit 0, the tool calls' files written);
// native forwards Codex's bodies byte for byte; router and rcm forward the
// returning task's calls with its own items and none of the other task's,
// rcm with its record; rcm's compaction call asks for one section per task.
func TestCodexThroughRCM(t *testing.T) {
	ctx, bin := npmtest.Codex.Prepare(t, 10*time.Minute)
	// The default model gets the additional_tools item and answers with
	// custom exec calls; gpt-5.5 gets the classic tools array and answers
	// with exec_command function calls.
	for _, model := range []string{"default", "gpt-5.5"} {
		for _, mode := range []string{"native", "router", "rcm"} {
			for _, transport := range []string{"http", "ws"} {
				t.Run(model+"-"+mode+"-"+transport, func(t *testing.T) {
					var flags []string
					if model != "default" {
						flags = []string{"-m", model}
					}
					codexSessionThrough(ctx, t, bin, flags, mode, transport == "ws")
				})
			}
		}
	}
}

func codexSessionThrough(ctx context.Context, t *testing.T, bin string, flags []string, mode string, ws bool) {
	// Codex closes its connection once it has read response.completed,
	// before the stream has ended: the model holds it open, as an API may.
	script := scripted.Marked()
	script.Hold = 2 * time.Second
	model := scripted.New(script)
	h, tap, srv := tappedProxy(t, model)
	env, dir := codexEnv(t, srv.URL+"/"+mode+"/v1", ws)

	run := func(args ...string) {
		codexRun(ctx, t, bin, env, dir, append(append([]string(nil), flags...), args...)...)
	}
	run("[task: alpha] Create the alpha file. RUN: echo alpha > alpha/a.txt")
	run("resume", "--last", "[task: beta] Create the beta file. RUN: echo beta > beta/b.txt")
	back := len(model.Requests())
	run("resume", "--last", "[task: alpha] Show the alpha file, BIG. RUN: cat alpha/a.txt")
	returning := model.Requests()[back:]
	compact := len(model.Requests())
	run("-c", "model_auto_compact_token_limit=20000", "resume", "--last", "[task: alpha] Say goodbye.")
	after := model.Requests()[compact:]

	custom := len(flags) == 0
	for i, c := range model.Requests() {
		if frame := gjson.GetBytes(c.Body, "type").Str == "response.create"; frame != ws {
			t.Fatalf("call %d came as a WebSocket frame: %v, want %v", i, frame, ws)
		}
		if c.Kind == "agent" && strings.Contains(string(c.Full), `"type":"additional_tools"`) != custom {
			t.Fatalf("call %d: additional_tools item present: %v, want %v", i, !custom, custom)
		}
	}

	for f, want := range map[string]string{"alpha/a.txt": "alpha\n", "beta/b.txt": "beta\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != want {
			t.Errorf("%s: %q (%v): Codex did not run the scripted tool call", f, b, err)
		}
	}
	var turns []scripted.Recorded
	for _, c := range returning {
		if c.Kind == "agent" {
			turns = append(turns, c)
		}
	}
	if len(turns) != 2 {
		t.Fatalf("the returning task's turn made %d calls, want 2 (tool call, answer)", len(turns))
	}
	for i, c := range turns {
		checkReturn(t, i, c.Full, mode)
		if chained := gjson.GetBytes(c.Body, "previous_response_id").Exists(); chained != (mode == "native" && ws) {
			t.Errorf("call %d went upstream chained: %v (mode %s)", i, chained, mode)
		}
	}
	var compaction *scripted.Recorded
	for i, c := range after {
		if c.Kind == "compaction" {
			compaction = &after[i]
		}
	}
	if compaction == nil {
		t.Fatalf("no compaction call after the BIG turn (kinds %v)", kinds(after))
	}
	if brief := briefed(compaction.Full); brief != (mode == "rcm") {
		t.Errorf("compaction call with one section per task: %v (mode %s)", brief, mode)
	}
	// After compaction, the returning task's calls carry the summary; in
	// rcm mode only its own section of it.
	var post int
	for _, c := range after {
		if c.Kind != "agent" || !strings.Contains(string(c.Full), "Summary of task alpha") {
			continue
		}
		post++
		if other := strings.Contains(string(c.Full), "Summary of task beta"); other != (mode != "rcm") {
			t.Errorf("post-compaction call holds the other task's section: %v (mode %s)", other, mode)
		}
	}
	if post == 0 && mode == "rcm" {
		t.Errorf("no post-compaction call carried the task-aware summary (kinds %v)", kinds(after))
	}
	// Codex may have exited before its last call's handler returned.
	tap.busy.Wait()
	if mode == "native" && ws {
		// Native mode relays a WebSocket byte for byte (upgrade.go): rcm
		// sees no call in it to record.
	} else {
		checkRecorded(t, h, srv.URL, map[string]int{tap.only(t): len(model.Requests())})
	}
	calls := tap.snapshot()
	if mode == "native" && !ws {
		// What Codex sent is what the upstream got, byte for byte.
		sent := map[string]int{}
		for _, c := range calls {
			sent[string(c.body)]++
		}
		for i, c := range model.Requests() {
			if sent[string(c.Body)] == 0 {
				t.Errorf("upstream call %d (%s) is not a body Codex sent", i, c.Kind)
			}
			sent[string(c.Body)]--
		}
	}
	if mode != "native" && !ws {
		var tasks []string
		for _, c := range calls {
			if tk := c.resp.Get(HeaderTask); tk != "" {
				tasks = append(tasks, tk)
			}
		}
		if strings.Join(tasks, ",") != "alpha,alpha,beta,beta,alpha,alpha,alpha" {
			t.Errorf("rcm named tasks %v", tasks)
		}
	}
}

// checkReturn checks call i of task alpha's return, as the upstream read
// it: its own earlier turn is there; beta's only when mode forwards
// everything (native); alpha's record only in rcm mode.
func checkReturn(t *testing.T, i int, body []byte, mode string) {
	t.Helper()
	s := string(body)
	if !strings.Contains(s, "echo alpha >") {
		t.Errorf("call %d of the returning task lacks its own earlier turn", i)
	}
	if routed := !strings.Contains(chattest.OutsideRecords(s), "echo beta >"); routed != (mode != "native") {
		t.Errorf("call %d: the other task's items forwarded: %v (mode %s)", i, !routed, mode)
	}
	if rec := strings.Contains(s, `<rcm-task-state task=\"alpha\"`); rec != (mode == "rcm") {
		t.Errorf("call %d: alpha's record present: %v (mode %s)", i, rec, mode)
	}
}

// briefed reports whether a compaction call asks for a section for each
// of the tasks alpha and beta.
func briefed(body []byte) bool {
	return strings.Contains(string(body), `<task id=\"alpha\"`) && strings.Contains(string(body), `<task id=\"beta\"`)
}

func kinds(cs []scripted.Recorded) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Kind)
	}
	return out
}
