package memory

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/transcript"
)

// TestObserveClaudeCode: a Claude Code turn in Anthropic blocks (Bash
// tool_use, its tool_result in the next user message, a file edit) and its
// streamed answer make the same record as chat messages would: the
// request, the command with its outcome, the changed file, the closing.
func TestObserveClaudeCode(t *testing.T) {
	body := []byte(`{"model":"m","messages":[` +
		`{"role":"user","content":[{"type":"text","text":"<system-reminder>\nctx\n</system-reminder>\n"},{"type":"text","text":"Fix the crash in /work/ws3/pkg/parse.py"}]},` +
		`{"role":"system","content":"# Environment"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"","signature":"s"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cd /work/ws3 && python -m pytest tests -q"}},{"type":"tool_use","id":"t2","name":"Edit","input":{"file_path":"/work/ws3/pkg/parse.py","old_string":"a","new_string":"b"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"F..\n=================== 1 failed, 2 passed in 0.12s ===================\n","is_error":true},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"ok"}]}]}]}`)
	tr, err := transcript.Parse(transcript.AnthropicMessages, body, transcript.Hints{})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := os.ReadFile(filepath.Join(capture.ClaudeCodeDir(), "fake_reply_text.sse.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	r.Observe(Observation{Transcript: tr, Turns: []int{0}, Response: reply, SSE: true, Status: 200})
	if len(r.Requirements) != 1 || r.Requirements[0].Text != "Fix the crash in /work/ws3/pkg/parse.py" {
		t.Errorf("requirements %+v", r.Requirements)
	}
	if r.LastTest == nil || r.LastTest.Outcome != "failed (1 failed, 2 passed)" {
		t.Errorf("last test %+v", r.LastTest)
	}
	if !slices.Equal(r.FilesChanged, []string{"/work/ws3/pkg/parse.py"}) {
		t.Errorf("files changed %q", r.FilesChanged)
	}
	if len(r.Progress) != 1 || r.Progress[0] == "" {
		t.Errorf("closing text of the answer not recorded: %q", r.Progress)
	}
}
