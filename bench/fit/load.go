package fit

import (
	"fmt"
	"slices"

	"github.com/rcm-dev/rcm/bench/chatlog"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/internal/chat"
)

// Synthetic lays out the bench's Switch-SWE sessions of spec (their S_switch
// schedules) as labelled sessions: every request continues its task, opens
// it, or returns to it, and needs only its own task.
func Synthetic(spec *benchspec.Spec) ([]*Session, error) {
	var out []*Session
	for i := range spec.Sessions {
		ss := &spec.Sessions[i]
		calls, err := spec.Calls(ss.ID, benchspec.ScheduleSwitch)
		if err != nil {
			return nil, err
		}
		if len(calls) == 0 {
			continue
		}
		last := calls[len(calls)-1]
		full := append(append([]chat.Message(nil), last.Messages...), last.Response)
		if len(full) == 0 || full[0].Role != chat.RoleSystem {
			return nil, fmt.Errorf("fit: %s: the history opens with no system prompt", ss.ID)
		}
		focus, _ := spec.Task(ss.Focus)
		s := &Session{Name: spec.Layout + "/" + spec.Returns + "/" + ss.ID, Group: focus.Repository, System: full[0].Content, Sampled: true}
		var starts []int
		var tasks []string
		for _, c := range calls {
			if c.Step == len(starts) {
				starts = append(starts, len(c.Messages)-1)
				tasks = append(tasks, c.Task)
			}
		}
		seen := map[string]bool{}
		prev := ""
		for k, at := range starts {
			end := len(full)
			if k+1 < len(starts) {
				end = starts[k+1]
			}
			if full[at].Role != chat.RoleUser {
				return nil, fmt.Errorf("fit: %s step %d opens with a %s message", ss.ID, k, full[at].Role)
			}
			s.Turns = append(s.Turns, chat.Turn{Request: full[at].Content, Messages: full[at+1 : end]})
			g := Gold{Task: tasks[k], Kind: KindContinue, Needs: []string{tasks[k]}}
			switch {
			case !seen[tasks[k]]:
				g.Kind, g.Needs = KindNew, nil
			case prev != tasks[k]:
				g.Kind = KindReturn
			}
			seen[tasks[k]], prev = true, tasks[k]
			s.Gold = append(s.Gold, g)
		}
		out = append(out, s)
	}
	return out, nil
}

// Real lays out labelled real session logs as sessions of OpenCode in the
// log's repository (an OpenCode system prompt's environment block naming
// the working directory, a git repository). A log without labels is an
// error: there is nothing to fit or measure; so is a compacted one (a
// Claude Code log past /compact), whose calls Simulate cannot lay out.
func Real(logs []chatlog.Session) ([]*Session, error) {
	var out []*Session
	for _, l := range logs {
		if len(l.Labels) != len(l.Turns) {
			return nil, fmt.Errorf("fit: %s: %d labels for %d turns", l.Name, len(l.Labels), len(l.Turns))
		}
		if i := slices.IndexFunc(l.Turns, func(t chat.Turn) bool { return t.Compacted() }); i >= 0 {
			// Simulate replays whole histories; a compacted one is not.
			return nil, fmt.Errorf("fit: %s: turn %d: the harness compacted its history there: the fit takes no compacted log", l.Name, i+1)
		}
		s := &Session{Name: l.Name, Group: l.Repo, Real: true, Turns: l.Turns, System: benchspec.OpenCodeSystem(l.Workdir, true)}
		if s.Group == "" {
			s.Group = l.Name
		}
		for _, lb := range l.Labels {
			s.Gold = append(s.Gold, Gold{Task: lb.Task, Kind: lb.Kind, Needs: lb.Needs})
		}
		out = append(out, s)
	}
	return out, nil
}
