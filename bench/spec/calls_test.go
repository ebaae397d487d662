package spec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
)

func TestCallsDemo(t *testing.T) {
	s, err := Demo()
	if err != nil {
		t.Fatal(err)
	}
	ss := &s.Sessions[0]
	for _, sched := range []Schedule{ScheduleBase, ScheduleSwitch} {
		steps := ss.Base
		if sched == ScheduleSwitch {
			steps = ss.Switch
		}
		calls, err := s.Calls(ss.ID, sched)
		if err != nil {
			t.Fatal(err)
		}
		// One call per recorded assistant message of the scheduled stages.
		want := 0
		for _, st := range steps {
			task, _ := s.Task(st.Task)
			for _, m := range task.Stages[st.Stage].Messages {
				if m.Role == chat.RoleAssistant {
					want++
				}
			}
		}
		if len(calls) != want {
			t.Fatalf("%s: %d calls, want %d", sched, len(calls), want)
		}
		for i, c := range calls {
			if c.Index != i || c.Task != steps[c.Step].Task || c.Stage != steps[c.Step].Stage || c.Workspace != ss.Workspaces[c.Task] {
				t.Fatalf("%s: call %d: %+v", sched, i, c)
			}
			if c.Messages[0].Role != chat.RoleSystem || !strings.Contains(c.Messages[0].Content, "Working directory: /work\n") {
				t.Fatalf("%s: call %d: system message %.80q", sched, i, c.Messages[0].Content)
			}
			if i > 0 { // the history only grows: the previous call's messages and answer are a prefix
				prev := calls[i-1]
				n := len(prev.Messages)
				if len(c.Messages) <= n || !reflect.DeepEqual(c.Messages[:n], prev.Messages) || !reflect.DeepEqual(c.Messages[n], prev.Response) {
					t.Fatalf("%s: call %d does not extend call %d", sched, i, i-1)
				}
			}
			checkout := "/work/" + c.Workspace
			for _, m := range append(c.Messages[1:], c.Response) {
				if strings.Contains(m.Content, CheckoutPlaceholder) || rewritePath(m.Content, "/testbed", "X") != m.Content {
					t.Fatalf("%s: call %d: unrewritten path in %.120q", sched, i, m.Content)
				}
			}
			for _, tc := range c.Response.ToolCalls {
				if !strings.Contains(tc.Function.Arguments, `"workdir":"`+checkout+`"`) {
					t.Fatalf("%s: call %d: tool call %s not in %s", sched, i, tc.Function.Arguments, checkout)
				}
			}
		}
		// The last call is the focus task's submit stage.
		last := calls[len(calls)-1]
		focus, _ := s.Task(ss.Focus)
		if last.Task != ss.Focus || !focus.Stages[last.Stage].Submit {
			t.Errorf("%s: last call %s stage %d", sched, last.Task, last.Stage)
		}
	}
	// Base is the focus task alone; switch interleaves all five.
	base, _ := s.Calls(ss.ID, ScheduleBase)
	sw, _ := s.Calls(ss.ID, ScheduleSwitch)
	tasks := map[string]bool{}
	for _, c := range sw {
		tasks[c.Task] = true
	}
	if len(tasks) != 5 || len(sw) <= len(base) {
		t.Errorf("switch covers %d tasks in %d calls (base %d)", len(tasks), len(sw), len(base))
	}
}

func TestCallsErrors(t *testing.T) {
	s := tinySpec(t)
	if _, err := s.Calls("nope", ScheduleBase); err == nil {
		t.Error("unknown session: no error")
	}
	if _, err := s.Calls(s.Sessions[0].ID, "sideways"); err == nil {
		t.Error("unknown schedule: no error")
	}
	s.Tasks[0].Stages[0].Messages = nil
	s.Tasks[1].Stages[0].Messages = nil
	for _, ss := range s.Sessions {
		if ss.Focus == "a" || ss.Focus == "b" {
			_, err := s.Calls(ss.ID, ScheduleBase)
			if err == nil || !strings.Contains(err.Error(), "no recorded assistant message to replay") {
				t.Errorf("%s: %v", ss.ID, err)
			}
		}
	}
}
