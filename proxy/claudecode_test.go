package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/internal/npm/npmtest"
	"github.com/rcm-dev/rcm/internal/scripted"
)

// bodies returns the bodies of the requests up received from the n-th on.
func bodies(up *scripted.Server, n int) [][]byte {
	var out [][]byte
	for _, r := range up.Requests()[n:] {
		out = append(out, r.Body)
	}
	return out
}

// TestClaudeCodeThroughRCM runs the real Claude Code (from npm) through rcm
// in each mode against the scripted upstream (scripted.Marked): task alpha
// in one folder, task beta in another (--continue), a subagent for beta,
// back to alpha (--resume), /compact, back to beta. Claude Code must accept
// every answer (its runs succeed and the files appear); native forwards
// every body unchanged; router and rcm route each call to its task and
// forward none of the other task's turns, the subagent's calls going out
// as sent on the parent's task; rcm adds the returning task's record,
// briefs the summarisation call with both tasks, and after it each task
// sees only its own summary section.
func TestClaudeCodeThroughRCM(t *testing.T) {
	ctx, bin := npmtest.ClaudeCode.Prepare(t, 8*time.Minute)
	for _, mode := range []string{"native", "router", "rcm"} {
		t.Run(mode, func(t *testing.T) { claudeSession(ctx, t, bin, mode) })
	}
}

func claudeSession(ctx context.Context, t *testing.T, bin, mode string) {
	up := scripted.New(scripted.Marked())
	h, tap, rcm := tappedProxy(t, up)

	home, project := t.TempDir(), t.TempDir()
	alpha, beta := filepath.Join(project, "alpha"), filepath.Join(project, "beta")
	for _, d := range []string{filepath.Join(home, ".claude"), alpha, beta} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + rcm.URL + "/" + mode,
		"ANTHROPIC_API_KEY=sk-test-client", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1", "DISABLE_BUG_COMMAND=1", "IS_SANDBOX=1", "NO_PROXY=127.0.0.1,localhost"}
	type run struct {
		calls    []ocCall
		upstream [][]byte
	}
	claude := func(args ...string) (run, map[string]any) {
		t.Helper()
		seen, sent := len(tap.snapshot()), len(up.Requests())
		cmd := exec.CommandContext(ctx, bin, append(append([]string{"-p"}, args...), "--output-format", "json", "--allowedTools", "Bash", "Agent")...)
		cmd.Dir, cmd.Env = project, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		h.after.Wait()
		var res map[string]any
		if err != nil || json.Unmarshal(out, &res) != nil || res["is_error"] == true {
			t.Fatalf("claude %q: %v\n%s\n%s", args, err, out, stderr.String())
		}
		return run{calls: tap.snapshot()[seen:], upstream: bodies(up, sent)}, res
	}
	r1, res := claude("[task: alpha] In " + alpha + " create a.txt. RUN: echo alpha-one > " + alpha + "/a.txt")
	sid, _ := res["session_id"].(string)
	r2, _ := claude("[task: beta] In "+beta+" create b.txt. RUN: echo beta-one > "+beta+"/b.txt", "--continue")
	rs, _ := claude("[task: beta] Now list "+beta+" in a subagent. AGENT: RUN: ls "+beta, "--continue")
	r3, _ := claude("[task: alpha] Back in "+alpha+": show the file. RUN: cat "+alpha+"/a.txt", "--resume", sid)
	r4, _ := claude("/compact", "--continue")
	r5, _ := claude("[task: beta] Back in "+beta+": show the file. RUN: cat "+beta+"/b.txt", "--continue")

	for f, want := range map[string]string{filepath.Join(alpha, "a.txt"): "alpha-one\n", filepath.Join(beta, "b.txt"): "beta-one\n"} {
		if b, err := os.ReadFile(f); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v: Claude Code did not run the scripted command", f, b, err)
		}
	}
	all := []run{r1, r2, rs, r3, r4, r5}
	for i, r := range all {
		if len(r.calls) == 0 || len(r.calls) != len(r.upstream) {
			t.Fatalf("run %d: %d calls, %d reached the upstream", i+1, len(r.calls), len(r.upstream))
		}
		for j, c := range r.calls {
			if c.status != http.StatusOK || c.fallback == FallbackError {
				t.Errorf("run %d call %d: status %d fallback %q", i+1, j, c.status, c.fallback)
			}
			if c.header.Get("X-Claude-Code-Session-Id") != sid || c.resp.Get(HeaderSession) != sid {
				t.Errorf("run %d call %d: session %q / %q, want %s", i+1, j, c.header.Get("X-Claude-Code-Session-Id"), c.resp.Get(HeaderSession), sid)
			}
			if mode == "native" && !bytes.Equal(c.body, r.upstream[j]) {
				t.Errorf("native run %d call %d: body changed", i+1, j)
			}
			if mode != "native" {
				if err := checkMessages(r.upstream[j]); err != nil {
					t.Errorf("%s run %d call %d: %v", mode, i+1, j, err)
				}
			}
		}
	}
	var subCalls []ocCall
	for _, c := range rs.calls {
		if c.header.Get("X-Claude-Code-Agent-Id") != "" {
			subCalls = append(subCalls, c)
		}
	}
	if len(subCalls) != 2 || len(rs.calls) != 4 || !strings.Contains(string(rs.upstream[3]), "b.txt") {
		t.Fatalf("subagent run: %d calls, %d of the subagent; the parent got its report: %v", len(rs.calls), len(subCalls), strings.Contains(string(rs.upstream[len(rs.upstream)-1]), "b.txt"))
	}
	t.Logf("%s: %d runs, calls per run %d %d %d %d %d %d", mode, len(all), len(r1.calls), len(r2.calls), len(rs.calls), len(r3.calls), len(r4.calls), len(r5.calls))
	var calls int
	for _, r := range all {
		calls += len(r.calls)
	}
	checkRecorded(t, h, rcm.URL, map[string]int{sid: calls})
	if mode == "native" {
		return
	}
	taskA, taskB := r1.calls[0].resp.Get(HeaderTask), r2.calls[0].resp.Get(HeaderTask)
	if taskA == "" || taskA == taskB {
		t.Fatalf("tasks alpha %q beta %q", taskA, taskB)
	}
	t.Logf("%s: alpha is %s, beta is %s; after /compact beta's call got: %.400s", mode, taskA, taskB,
		strings.ReplaceAll(string(r5.upstream[0][bytes.Index(r5.upstream[0], []byte(`"messages"`)):]), "\\n", " "))
	routed := func(r run, name, task, own, other string) {
		t.Helper()
		for j, c := range r.calls {
			if got := c.resp.Get(HeaderTask); got != task {
				t.Errorf("%s call %d: task %q, want %q", name, j, got, task)
			}
			body := chattest.OutsideRecords(string(r.upstream[j]))
			if strings.Contains(body, other) || !strings.Contains(body, own) {
				t.Errorf("%s call %d: forwarded the other task's turns (%v) or lost its own (%v)", name, j, strings.Contains(body, other), !strings.Contains(body, own))
			}
		}
	}
	routed(r2, "beta", taskB, "echo beta-one", "echo alpha-one")
	for _, c := range subCalls {
		if c.resp.Get(HeaderTask) != taskB || c.fallback != FallbackSideCall {
			t.Errorf("subagent call: task %q fallback %q, want the parent's %q as a side call", c.resp.Get(HeaderTask), c.fallback, taskB)
		}
	}
	for j, c := range rs.calls {
		if c.header.Get("X-Claude-Code-Agent-Id") == "" && (c.resp.Get(HeaderTask) != taskB || strings.Contains(chattest.OutsideRecords(string(rs.upstream[j])), "echo alpha-one")) {
			t.Errorf("subagent run, parent call %d: task %q", j, c.resp.Get(HeaderTask))
		}
	}
	routed(r3, "alpha again", taskA, "echo alpha-one", "echo beta-one")
	if mode == "rcm" {
		rec := string(r3.upstream[0])
		if !strings.Contains(rec, "<rcm-task-state task=\\\""+taskA) || strings.Contains(rec, "<rcm-task-state task=\\\""+taskB) {
			t.Errorf("alpha's return lacks alpha's record or has beta's")
		}
		comp := string(r4.upstream[0])
		if r4.calls[0].fallback != FallbackSideCall || !strings.Contains(comp, `<task id=\"`+taskA) || !strings.Contains(comp, `<task id=\"`+taskB) {
			t.Errorf("summarisation call not briefed with both tasks (fallback %q)", r4.calls[0].fallback)
		}
		after := string(r5.upstream[0])
		if !strings.Contains(after, "## Task "+taskB) || strings.Contains(after, "## Task "+taskA) {
			t.Errorf("after compaction beta sees %v its section and %v alpha's", strings.Contains(after, "## Task "+taskB), strings.Contains(after, "## Task "+taskA))
		}
	}
	if got := r5.calls[0].resp.Get(HeaderTask); got != taskB {
		t.Errorf("after compaction: task %q, want beta's %q", got, taskB)
	}
}

// tappedProxy serves rcm (native by default) in front of the upstream up,
// with every call and rcm's answer to it noted by the tap.
func tappedProxy(t *testing.T, up http.Handler) (*Handler, *ocTap, *httptest.Server) {
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	cfg := Config{Upstream: upSrv.URL + "/v1", AnthropicUpstream: upSrv.URL, Mode: Native, DB: filepath.Join(t.TempDir(), "rcm.db")}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	tap := &ocTap{next: h}
	srv := httptest.NewServer(tap)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return h, tap, srv
}

func (tp *ocTap) snapshot() []ocCall {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]ocCall(nil), tp.seen...)
}
