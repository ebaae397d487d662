package spec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// baseSchedule returns S_base(A) = (A_1 .. A_k, A_submit): every stage of the
// focus task in order.
func baseSchedule(focus *Task) []Step {
	steps := make([]Step, len(focus.Stages))
	for i := range focus.Stages {
		steps[i] = Step{Task: focus.ID, Stage: i}
	}
	return steps
}

// switchSchedule returns S_switch(A) = (A_1, B_1, C_1, D_1, E_1, A_2, ..., A_submit)
// for the distractors in the given order. Round r is the focus task's stage r
// followed by stage r of each distractor that has one (distractors' submit
// stages are never scheduled: only the focus task is scored), for every
// non-submit stage of the focus task; the focus task's submit stage is last.
func switchSchedule(focus *Task, distractors []*Task) []Step {
	var steps []Step
	for r, st := range focus.Stages {
		steps = append(steps, Step{Task: focus.ID, Stage: r})
		if st.Submit {
			continue
		}
		for _, d := range distractors {
			if r < len(d.Stages) && !d.Stages[r].Submit {
				steps = append(steps, Step{Task: d.ID, Stage: r})
			}
		}
	}
	return steps
}

// project returns pi_task(steps): the steps of one task, in order.
func project(steps []Step, task string) []Step {
	var out []Step
	for _, s := range steps {
		if s.Task == task {
			out = append(out, s)
		}
	}
	return out
}

// checkSchedules refuses schedules that break the Switch-SWE rule: S_base
// must be every stage of the focus task ending with its submit stage, every
// S_switch step must name a session task's existing stage, once and in stage
// order, distractors never submit, and pi_A S_switch(A) = S_base(A).
func (s *Spec) checkSchedules(ss *Session) error {
	focus, _ := s.Task(ss.Focus)
	var errs []error
	if n := len(focus.Stages); n == 0 || !focus.Stages[n-1].Submit {
		errs = append(errs, fmt.Errorf("focus task %s: last stage is not a submit stage", focus.ID))
	}
	if !slices.Equal(ss.Base, baseSchedule(focus)) {
		errs = append(errs, fmt.Errorf("base: %s, want every stage of %s in order: %s",
			formatSteps(ss.Base), focus.ID, formatSteps(baseSchedule(focus))))
	}
	last := map[string]int{}
	for i, st := range ss.Switch {
		t, ok := s.Task(st.Task)
		if !ok || (st.Task != ss.Focus && !slices.Contains(ss.Distractors, st.Task)) {
			errs = append(errs, fmt.Errorf("switch[%d]: task %q: not in the session", i, st.Task))
			continue
		}
		if st.Stage < 0 || st.Stage >= len(t.Stages) {
			errs = append(errs, fmt.Errorf("switch[%d]: task %s: stage %d: out of range (%d stages)", i, st.Task, st.Stage, len(t.Stages)))
			continue
		}
		if st.Task != ss.Focus && t.Stages[st.Stage].Submit {
			errs = append(errs, fmt.Errorf("switch[%d]: task %s: a distractor's submit stage is scheduled", i, st.Task))
		}
		if prev, ok := last[st.Task]; ok && st.Stage <= prev {
			errs = append(errs, fmt.Errorf("switch[%d]: task %s: stage %d after stage %d", i, st.Task, st.Stage, prev))
		}
		last[st.Task] = st.Stage
	}
	if p := project(ss.Switch, ss.Focus); !slices.Equal(p, ss.Base) {
		errs = append(errs, fmt.Errorf("projection: pi_%s(switch) = %s differs from base = %s",
			ss.Focus, formatSteps(p), formatSteps(ss.Base)))
	}
	return errors.Join(errs...)
}

func formatSteps(steps []Step) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = fmt.Sprintf("%s#%d", s.Task, s.Stage)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
