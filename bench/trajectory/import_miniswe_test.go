package trajectory

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
)

func TestReadMiniSWEReal(t *testing.T) {
	b := chattest.ReadShared(t, "trajectories", "mini-swe-agent", "django__django-11099.traj.json")
	tr, skips, err := ReadMiniSWE(b, "11099")
	if err != nil {
		t.Fatal(err)
	}
	if len(skips) != 0 {
		t.Errorf("skips = %v", skips)
	}
	if tr.Task != "django__django-11099" || tr.Workdir != "/testbed" || len(tr.Turns) != 1 {
		t.Fatalf("trajectory = %s %s %d turns", tr.Task, tr.Workdir, len(tr.Turns))
	}
	turn := tr.Turns[0]
	if !strings.HasPrefix(turn.Request, "UsernameValidator allows trailing newline in usernames") {
		t.Errorf("request = %.80q", turn.Request)
	}
	// 21 api calls: 21 assistant messages, each one bash call with its result.
	if len(turn.Messages) != 42 {
		t.Fatalf("%d messages, want 42", len(turn.Messages))
	}
	first := turn.Messages[0]
	var args map[string]string
	if err := json.Unmarshal([]byte(first.ToolCalls[0].Function.Arguments), &args); err != nil {
		t.Fatal(err)
	}
	if first.ToolCalls[0].Function.Name != "bash" || args["command"] != "ls -R | grep -i validators" || args["workdir"] != "/testbed" || args["description"] == "" {
		t.Errorf("first call = %+v", first.ToolCalls[0])
	}
	if strings.HasPrefix(first.Content, "THOUGHT") || !strings.HasPrefix(first.Content, "I need to locate") {
		t.Errorf("first content = %.60q", first.Content)
	}
	if res := turn.Messages[1]; res.Role != chat.RoleTool || res.ToolCallID != first.ToolCalls[0].ID || !strings.HasPrefix(res.Content, "validators.py\n") {
		t.Errorf("first result = %+v", res)
	}
	last := turn.Messages[len(turn.Messages)-1]
	if !strings.HasPrefix(last.Content, "diff --git a/django/contrib/auth/validators.py") {
		t.Errorf("submission output = %.60q", last.Content)
	}
	if err := ValidateMessages(turn.Messages); err != nil {
		t.Error(err)
	}
}

func TestReadMiniSWEFormatError(t *testing.T) {
	// 11133 has an assistant message with two bash blocks and the
	// format-error reply it drew: both are dropped, and reported.
	b := chattest.ReadShared(t, "trajectories", "mini-swe-agent", "django__django-11133.traj.json")
	tr, skips, err := ReadMiniSWE(b, "11133")
	if err != nil {
		t.Fatal(err)
	}
	if len(skips) != 1 || !strings.Contains(skips[0].Reason, "2 bash blocks") {
		t.Fatalf("skips = %v", skips)
	}
	for _, m := range tr.Turns[0].Messages {
		if strings.Contains(m.Content, "Please always provide EXACTLY ONE action") {
			t.Fatal("format-error reply kept")
		}
	}
	if err := ValidateMessages(tr.Turns[0].Messages); err != nil {
		t.Error(err)
	}
}

func TestReadMiniSWEAll(t *testing.T) {
	chattest.EachShared(t, "trajectories/mini-swe-agent", "*.traj.json", 30, func(f string, b []byte) {
		tr, _, err := ReadMiniSWE(b, f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			return
		}
		if err := ValidateMessages(tr.Turns[0].Messages); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	})
}

func TestToolOutput(t *testing.T) {
	if got := toolOutput("<returncode>0</returncode>\n<output>\nhi\n</output>"); got != "hi\n" {
		t.Errorf("rc 0: %q", got)
	}
	if got := toolOutput("<returncode>2</returncode>\n<output>\nboom\n</output>"); got != "boom\n\nexit code: 2" {
		t.Errorf("rc 2: %q", got)
	}
	if got := toolOutput("diff --git a/x b/x"); got != "diff --git a/x b/x" {
		t.Errorf("raw: %q", got)
	}
}

func FuzzReadMiniSWE(f *testing.F) {
	f.Add([]byte(`{"instance_id":"x","trajectory_format":"mini-swe-agent-1","messages":[{"role":"system","content":"s"},{"role":"user","content":"<pr_description>fix</pr_description>"},{"role":"assistant","content":"THOUGHT: t\n` + "```bash\\nls\\n```" + `"},{"role":"user","content":"<returncode>0</returncode><output>a</output>"}]}`))
	f.Add([]byte(`{"instance_id":"x","messages":[{"role":"user","content":5}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, _, err := ReadMiniSWE(b, "fuzz")
		if err != nil {
			return
		}
		if err := ValidateMessages(tr.Turns[0].Messages); err != nil {
			t.Fatalf("invalid history: %v", err)
		}
	})
}

// TestMiniSWEGolden: memory's tests read two real trajectories as this
// importer converts them, from golden files, so that they need neither the
// bench nor the shared data. The files must equal the current conversion
// (go test ./bench/trajectory -run TestMiniSWEGolden -update rewrites them).
func TestMiniSWEGolden(t *testing.T) {
	for _, id := range []string{"django__django-11099", "sympy__sympy-13480"} {
		tr, _, err := ReadMiniSWE(chattest.ReadShared(t, "trajectories", "mini-swe-agent", id+".traj.json"), id)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.MarshalIndent(tr, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		golden := filepath.Join("..", "..", "memory", "testdata", id+".trajectory.json")
		if *update {
			if err := os.WriteFile(golden, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the importer's conversion: rerun with -update", golden)
		}
	}
}

var update = flag.Bool("update", false, "rewrite memory's golden trajectories from shared/data")
