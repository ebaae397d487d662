package spec

import (
	_ "embed"
	"fmt"
	"path"
	"strings"

	"github.com/rcm-dev/rcm/internal/chat"
)

//go:embed opencode_system.txt
var opencodeSystem string

// OpenCodeSystem returns the system prompt OpenCode 1.18.33 sent in a real
// capture (shared/opencode/first_agent_request.json) with its working
// directory and workspace root set to dir, and "Is directory a git repo"
// yes when git: a replayed session's, when the spec sets none.
func OpenCodeSystem(dir string, git bool) string {
	s := strings.ReplaceAll(opencodeSystem, "{root}", dir)
	if git {
		s = strings.Replace(s, "Is directory a git repo: no", "Is directory a git repo: yes", 1)
	}
	return s
}

// Schedule selects one of a session's two schedules.
type Schedule string

// The two schedules of a session.
const (
	ScheduleBase   Schedule = "base"
	ScheduleSwitch Schedule = "switch"
)

// Call is one model call of a replayed schedule: what the harness sends and
// what the recorded model answered.
type Call struct {
	Session  string   `json:"session"`
	Schedule Schedule `json:"schedule"`
	// Index counts the schedule's calls from 0; Step indexes its steps.
	Index int `json:"index"`
	Step  int `json:"step"`
	// Task is the ground truth: the task the current turn belongs to.
	Task      string `json:"task"`
	Stage     int    `json:"stage"`
	Workspace string `json:"workspace"`
	// Messages is the full history the harness sends on this call: the system
	// prompt, every earlier request with its recorded answer, and the current
	// stage so far. Calls share backing arrays; do not modify elements.
	Messages []chat.Message `json:"messages"`
	// Response is the recorded assistant message answering this call.
	Response chat.Message `json:"response"`
}

// Checkout returns the checkout path of a task in a session: its own, or
// in the shared layout the session's one checkout.
func (s *Spec) Checkout(sess *Session, task string) string {
	if s.shared() {
		return s.sharedCheckout(sess)
	}
	return path.Join(s.Root(), sess.Workspaces[task])
}

// Calls replays one schedule of a session as a harness would send it: one
// call per recorded assistant message, each re-sending the growing history.
// Each step appends the stage's request (its CheckoutPlaceholder and the
// task's Workdir replaced by the checkout) and then the stage's recorded
// messages, with the Workdir rewritten the same way. A stage with no
// recorded assistant message cannot be replayed and is an error.
func (s *Spec) Calls(session string, sched Schedule) ([]Call, error) {
	sess, ok := s.Session(session)
	if !ok {
		return nil, fmt.Errorf("bench: session %q: not in the spec", session)
	}
	var steps []Step
	switch sched {
	case ScheduleBase:
		steps = sess.Base
	case ScheduleSwitch:
		steps = sess.Switch
	default:
		return nil, fmt.Errorf("bench: schedule %q: want base or switch", sched)
	}
	system := s.SystemPrompt
	switch {
	case system == "" && s.shared():
		// The harness was opened in the repository itself.
		system = OpenCodeSystem(s.sharedCheckout(sess), true)
	case system == "":
		system = OpenCodeSystem(s.Root(), false)
	}
	history := []chat.Message{{Role: chat.RoleSystem, Content: system}}
	var calls []Call
	for i, st := range steps {
		t, ok := s.Task(st.Task)
		if !ok || st.Stage < 0 || st.Stage >= len(t.Stages) {
			return nil, fmt.Errorf("bench: session %s: %s[%d]: no stage %d of task %q", session, sched, i, st.Stage, st.Task)
		}
		checkout := s.Checkout(sess, t.ID)
		stage := t.Stages[st.Stage]
		req := stage.Request
		if s.shared() {
			req = sharedRequest(t, st.Stage, s.Returns == ReturnsUntitled)
		}
		req = strings.ReplaceAll(req, CheckoutPlaceholder, checkout)
		history = append(history, chat.Message{Role: chat.RoleUser, Content: rewritePath(req, t.Workdir, checkout)})
		n := len(calls)
		for _, m := range stage.Messages {
			m = rewrite(m, t.Workdir, checkout)
			if m.Role == chat.RoleAssistant {
				calls = append(calls, Call{
					Session: session, Schedule: sched, Index: len(calls), Step: i,
					Task: t.ID, Stage: st.Stage, Workspace: sess.Workspaces[t.ID],
					Messages: history[:len(history):len(history)],
					Response: m,
				})
			}
			history = append(history, m)
		}
		if len(calls) == n {
			return nil, fmt.Errorf("bench: session %s: %s[%d]: task %s: stages[%d]: no recorded assistant message to replay",
				session, sched, i, t.ID, st.Stage)
		}
	}
	return calls, nil
}
