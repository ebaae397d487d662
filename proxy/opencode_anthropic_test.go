package proxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/internal/client/opencode"
	"github.com/rcm-dev/rcm/internal/npm/npmtest"
	"github.com/rcm-dev/rcm/internal/scripted"
)

// TestOpenCodeAnthropicThroughRCM runs the real OpenCode with its Anthropic
// provider (@ai-sdk/anthropic, /v1/messages) through rcm in each mode
// against the scripted upstream (scripted.Marked): task alpha, task beta,
// back to alpha, then a compaction. OpenCode must finish every turn with the
// scripted answer and run the scripted commands; native forwards every
// body unchanged; router and rcm route each call of the return to alpha
// without beta's turns; rcm adds alpha's record and briefs OpenCode's
// compaction call with both tasks.
func TestOpenCodeAnthropicThroughRCM(t *testing.T) {
	ctx, bin := npmtest.OpenCode.Prepare(t, 6*time.Minute)

	up := scripted.New(scripted.Marked())
	h, tap, rcm := tappedProxy(t, up)
	srv := ocStart(ctx, t, bin, opencode.Config{Proxy: rcm.URL, APIKey: "sk-client", NPM: opencode.NPMAnthropic})

	for _, mode := range opencode.Modes {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			alpha, beta := filepath.Join(dir, "alpha"), filepath.Join(dir, "beta")
			for _, d := range []string{alpha, beta} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			s, err := srv.CreateSession(ctx, dir, "two tasks")
			if err != nil {
				t.Fatal(err)
			}
			type turn struct {
				calls    []ocCall
				upstream [][]byte
			}
			prompt := func(text, want string) turn {
				t.Helper()
				seen, sent := len(tap.snapshot()), len(up.Requests())
				m, err := srv.Prompt(ctx, s.ID, dir, mode, opencode.DefaultModelID, text)
				if err != nil {
					t.Fatalf("%v\nopencode output:\n%s", err, srv.Output())
				}
				if got := m.Text(); got != want {
					t.Fatalf("turn %q answered %q, want %q", text, got, want)
				}
				h.after.Wait()
				var tn turn
				for _, c := range tap.snapshot()[seen:] {
					if c.header.Get("X-Session-Id") == s.ID && strings.HasSuffix(c.path, "/v1/messages") && !strings.Contains(string(c.body), "title generator") {
						tn.calls = append(tn.calls, c)
					}
				}
				for _, b := range bodies(up, sent) {
					if !strings.Contains(string(b), "title generator") {
						tn.upstream = append(tn.upstream, b)
					}
				}
				return tn
			}
			a1 := prompt("[task: alpha] In "+alpha+" create a.txt. RUN: echo alpha-one > "+alpha+"/a.txt", "Done: (no output)")
			b1 := prompt("[task: beta] In "+beta+" create b.txt. RUN: echo beta-one > "+beta+"/b.txt", "Done: (no output)")
			a2 := prompt("[task: alpha] Back in "+alpha+": show it. RUN: cat "+alpha+"/a.txt", "Done: alpha-one")
			for f, want := range map[string]string{filepath.Join(alpha, "a.txt"): "alpha-one\n", filepath.Join(beta, "b.txt"): "beta-one\n"} {
				if b, err := os.ReadFile(f); err != nil || string(b) != want {
					t.Errorf("%s = %q, %v: OpenCode did not run the scripted command", f, b, err)
				}
			}
			for i, tn := range []turn{a1, b1, a2} {
				if len(tn.calls) != 2 || len(tn.upstream) != 2 {
					t.Fatalf("turn %d: %d calls, %d reached the upstream; want the tool call and the answer", i, len(tn.calls), len(tn.upstream))
				}
				for j, c := range tn.calls {
					if c.status != 200 || c.fallback == FallbackError || c.resp.Get(HeaderSession) != s.ID {
						t.Errorf("turn %d call %d: status %d fallback %q session %q", i, j, c.status, c.fallback, c.resp.Get(HeaderSession))
					}
					if c.header.Get("X-Api-Key") != "sk-client" {
						t.Errorf("turn %d call %d: x-api-key %q", i, j, c.header.Get("X-Api-Key"))
					}
					if mode == "native" && string(c.body) != string(tn.upstream[j]) {
						t.Errorf("native turn %d call %d: body changed", i, j)
					}
					if err := checkMessages(tn.upstream[j]); err != nil {
						t.Errorf("%s turn %d call %d: %v", mode, i, j, err)
					}
				}
			}
			if mode == "native" {
				return
			}
			taskA, taskB := a1.calls[0].resp.Get(HeaderTask), b1.calls[0].resp.Get(HeaderTask)
			if taskA == "" || taskA == taskB {
				t.Fatalf("tasks alpha %q beta %q", taskA, taskB)
			}
			for j, c := range a2.calls {
				body := string(a2.upstream[j])
				turns := chattest.OutsideRecords(body)
				if c.resp.Get(HeaderTask) != taskA || strings.Contains(turns, "echo beta-one") || !strings.Contains(turns, "echo alpha-one") {
					t.Errorf("alpha's return, call %d: task %q, beta's turn forwarded %v", j, c.resp.Get(HeaderTask), strings.Contains(turns, "echo beta-one"))
				}
				if mode == "rcm" && !strings.Contains(body, `<rcm-task-state task=\"`+taskA) {
					t.Errorf("alpha's return, call %d: no record", j)
				}
			}
			if mode != "rcm" {
				return
			}
			sent := len(up.Requests())
			if err := srv.Summarize(ctx, s.ID, dir, mode, opencode.DefaultModelID); err != nil {
				t.Fatalf("%v\nopencode output:\n%s", err, srv.Output())
			}
			h.after.Wait()
			var briefed bool
			for _, b := range bodies(up, sent) {
				if strings.Contains(string(b), "summarization agent") || strings.Contains(string(b), "<conversation>") {
					briefed = strings.Contains(string(b), `<task id=\"`+taskA) && strings.Contains(string(b), `<task id=\"`+taskB)
				}
			}
			if !briefed {
				t.Errorf("OpenCode's compaction call through its Anthropic provider not briefed with both tasks")
			}
		})
	}
}
