package spec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/bench/trajectory"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
)

// tinyTask is a valid one-stage-plus-submit task changing file.
func tinyTask(id, file string) Task {
	stage := func(req string, submit bool) Stage {
		return Stage{Request: req, Submit: submit, Messages: []chat.Message{
			{Role: chat.RoleAssistant, Content: "look", ToolCalls: []chat.ToolCall{chattest.Call("c1", "bash", map[string]string{"command": "ls", "description": "list", "workdir": "/testbed"})}},
			{Role: chat.RoleTool, ToolCallID: "c1", Content: "/testbed/" + file},
			{Role: chat.RoleAssistant, Content: "done"},
		}}
	}
	return Task{
		ID: id, Repository: "o/r", Workdir: "/testbed",
		Stages:   []Stage{stage("fix "+id+" in "+CheckoutPlaceholder, false), stage(submitRequest(id), true)},
		Verifier: Verifier{ChangedFiles: []string{file}},
	}
}

func tinySpec(t *testing.T) *Spec {
	t.Helper()
	tasks := []Task{tinyTask("a", "p/a.py"), tinyTask("b", "p/b.py"), tinyTask("c", "q/c.py"),
		tinyTask("d", "r/d.py"), tinyTask("e", "s/e.py"), tinyTask("f", "t/f.py")}
	s, _, err := NewSpec("tiny", tasks, 7)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseRoundTrip(t *testing.T) {
	s := tinySpec(t)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tasks) != 6 || len(got.Sessions) != len(s.Sessions) {
		t.Fatalf("round trip: %d tasks, %d sessions", len(got.Tasks), len(got.Sessions))
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Load of a missing file: no error")
	}
}

func TestValidateErrors(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *Spec)
		want   string
	}{
		{"empty request", func(s *Spec) { s.Tasks[0].Stages[0].Request = "" }, "task a: stages[0]: request: empty"},
		{"no repository", func(s *Spec) { s.Tasks[1].Repository = "" }, "task b: repository: empty"},
		{"submit not last", func(s *Spec) { s.Tasks[0].Stages[0].Submit = true }, "task a: stages[0]: submit: only the last stage may submit"},
		{"duplicate task", func(s *Spec) { s.Tasks[1].ID = "a" }, "task a: id: duplicate"},
		{"version", func(s *Spec) { s.Version = 2 }, "version: 2, want 1"},
		{"test patch not a diff", func(s *Spec) { s.Tasks[1].Verifier.TestPatch = "add tests" }, "task b: verifier.test_patch: no file headers"},
		{"tool result missing", func(s *Spec) { s.Tasks[2].Stages[0].Messages = s.Tasks[2].Stages[0].Messages[:1] },
			`task c: stages[0]: messages: tool call "c1": no tool result`},
		{"orphan tool result", func(s *Spec) { s.Tasks[2].Stages[0].Messages[1].ToolCallID = "zz" },
			`task c: stages[0]: messages[1]: tool_call_id "zz": answers no pending call`},
		{"bad arguments", func(s *Spec) { s.Tasks[2].Stages[0].Messages[0].ToolCalls[0].Function.Arguments = "{" },
			"task c: stages[0]: messages[0].tool_calls[0]: arguments: not JSON"},
		{"projection", func(s *Spec) {
			sw := s.Sessions[0].Switch
			sw[0], sw[len(sw)-1] = sw[len(sw)-1], sw[0]
		}, "projection: pi_"},
		{"distractor overlaps focus", func(s *Spec) {
			d, _ := s.Task(s.Sessions[0].Distractors[0])
			f, _ := s.Task(s.Sessions[0].Focus)
			d.Verifier.ChangedFiles = f.Verifier.ChangedFiles
		}, "as the focus does"},
		{"workspace twice", func(s *Spec) {
			ss := &s.Sessions[0]
			ss.Workspaces[ss.Distractors[0]] = ss.Workspaces[ss.Focus]
		}, "already holds task"},
		{"three distractors", func(s *Spec) { s.Sessions[0].Distractors = s.Sessions[0].Distractors[:3] }, "distractors: 3 tasks, want 4"},
		{"distractor submits", func(s *Spec) {
			ss := &s.Sessions[0]
			ss.Switch = append(ss.Switch[:len(ss.Switch)-1], Step{Task: ss.Distractors[0], Stage: 1}, ss.Switch[len(ss.Switch)-1])
		}, "a distractor's submit stage is scheduled"},
		{"base wrong", func(s *Spec) { s.Sessions[0].Base = s.Sessions[0].Base[:1] }, "base: [a#0], want every stage"},
		{"unknown kind", func(s *Spec) { s.Sessions[0].Kind = "mid" }, `kind: "mid"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := tinySpec(t)
			c.mutate(s)
			err := s.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate() = %v, want error containing %q", err, c.want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for name, in := range map[string]string{
		"unknown field": `{"version":1,"tasks":[],"sessions":[],"extra":1}`,
		"not json":      `{"version":`,
		"trailing":      `{"version":1} {}`,
		"no tasks":      `{"version":1,"tasks":[],"sessions":[]}`,
	} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("%s: Parse accepted %s", name, in)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(demoJSON[:min(len(demoJSON), 4096)])
	f.Add([]byte(`{"version":1,"tasks":[{"id":"a","repository":"r","stages":[{"request":"x","submit":true}]}],"sessions":[{"id":"s","focus":"a"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err == nil {
			for _, ss := range s.Sessions {
				_, _ = s.Calls(ss.ID, ScheduleSwitch)
			}
		}
	})
}

func TestClaudeCodeTask(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(chattest.SharedData(t, "sessions", "swe-together"), "*.json"))
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".json")
		tr, _, err := trajectory.ReadClaudeCode(chattest.ReadShared(t, "sessions", "swe-together", filepath.Base(f)), f, id)
		if err != nil {
			t.Fatal(err)
		}
		task, _, err := makeTask(nil, tr, "entireio/cli")
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if !strings.HasPrefix(task.Stages[0].Request, "In the checkout {checkout}: ") || !task.Stages[len(task.Stages)-1].Submit {
			t.Errorf("%s: stages %q ... submit %v", id, task.Stages[0].Request[:40], task.Stages[len(task.Stages)-1].Submit)
		}
		if id == "cli-task-2026-0" {
			if len(task.Verifier.ChangedFiles) == 0 || strings.HasPrefix(task.Verifier.ChangedFiles[0], "/") {
				t.Errorf("%s: changed files %q, want paths relative to the workdir", id, task.Verifier.ChangedFiles)
			}
		}
	}
}
