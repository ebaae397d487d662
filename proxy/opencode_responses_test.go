package proxy

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/client/opencode"
	"github.com/rcm-dev/rcm/internal/npm/npmtest"
	"github.com/rcm-dev/rcm/internal/scripted"
)

// TestOpenCodeResponsesThroughRCM runs the real OpenCode with its OpenAI
// provider (@ai-sdk/openai, which calls the Responses API) through rcm in
// each mode against the scripted Responses API (scripted.Marked): two
// tagged tasks in two folders, a return to the first, then OpenCode's
// compaction. OpenCode must
// finish every turn (the tool calls' files written); router and rcm forward
// the returning task's calls with its own items and none of the other's,
// rcm with its record; rcm's compaction call asks for one section per task.
func TestOpenCodeResponsesThroughRCM(t *testing.T) {
	ctx, bin := npmtest.OpenCode.Prepare(t, 5*time.Minute)
	for _, mode := range []string{"native", "router", "rcm"} {
		t.Run(mode, func(t *testing.T) {
			model := scripted.New(scripted.Marked())
			up := httptest.NewServer(model)
			t.Cleanup(up.Close)
			_, rcm, _ := newHandler(t, Config{Upstream: up.URL + "/v1"})

			srv := ocStart(ctx, t, bin, opencode.Config{Proxy: rcm.URL, APIKey: "sk-client", NPM: opencode.NPMOpenAI, Modes: []string{mode}})
			dir := t.TempDir()
			for _, d := range []string{"alpha", "beta"} {
				os.MkdirAll(filepath.Join(dir, d), 0o755)
			}
			s, err := srv.CreateSession(ctx, dir, "two tasks")
			if err != nil {
				t.Fatal(err)
			}
			prompt := func(text string) {
				t.Helper()
				if _, err := srv.Prompt(ctx, s.ID, dir, mode, opencode.DefaultModelID, text); err != nil {
					t.Fatalf("%v\nopencode output:\n%s", err, srv.Output())
				}
			}
			prompt("[task: alpha] Create the alpha file. RUN: echo alpha > " + dir + "/alpha/a.txt")
			prompt("[task: beta] Create the beta file. RUN: echo beta > " + dir + "/beta/b.txt")
			back := len(model.Requests())
			prompt("[task: alpha] Show the alpha file. RUN: cat " + dir + "/alpha/a.txt")
			returning := model.Requests()[back:]
			compact := len(model.Requests())
			if err := srv.Summarize(ctx, s.ID, dir, mode, opencode.DefaultModelID); err != nil {
				t.Fatalf("%v\nopencode output:\n%s", err, srv.Output())
			}
			after := model.Requests()[compact:]

			for f, want := range map[string]string{"alpha/a.txt": "alpha\n", "beta/b.txt": "beta\n"} {
				if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != want {
					t.Errorf("%s: %q (%v): OpenCode did not run the scripted tool call", f, b, err)
				}
			}
			var turns int
			for i, c := range returning {
				if !strings.Contains(string(c.Full), "Show the alpha file") {
					continue // the title call, if it came now
				}
				turns++
				checkReturn(t, i, c.Full, mode)
			}
			if turns != 2 {
				t.Errorf("the returning task's turn made %d calls, want 2 (tool call, answer)", turns)
			}
			var brief bool
			for _, c := range after {
				brief = brief || briefed(c.Full)
			}
			if len(after) == 0 || brief != (mode == "rcm") {
				t.Errorf("compaction: %d calls, one section per task asked: %v (mode %s)", len(after), brief, mode)
			}
		})
	}
}
