package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/rcm-dev/rcm/bench/trajectory"
	"github.com/rcm-dev/rcm/internal/chat"
)

// makeTask builds a task from a SWE-bench instance, a recorded trajectory,
// or both (repo names the repository when inst is nil). The stages:
//
//   - a one-turn trajectory (mini-swe-agent, OpenHands) answers the issue;
//     its steps (an assistant message with its tool results) are dealt out:
//     the last step to the submit stage, the others to the issue stage, or,
//     when the instance has hints and at least two steps remain, the first
//     half (rounded up) to the issue stage and the rest to the hints stage;
//   - a trajectory of several turns (Claude Code) keeps one stage per human
//     request, the first naming the checkout, later ones verbatim (short
//     follow-ups such as "yes please" that must stay on their task); its
//     last step moves to the submit stage, and a stage left with no
//     assistant message is dropped and reported.
//
// Without an instance the changed files are those the trajectory's edit and
// write calls touched inside Workdir.
func makeTask(inst *Instance, tr *chat.Trajectory, repo string) (Task, []trajectory.Skip, error) {
	if inst == nil && tr == nil {
		return Task{}, nil, errors.New("bench: no instance and no trajectory")
	}
	var t Task
	if inst != nil {
		t = inst.Task()
		if tr == nil {
			return t, nil, nil
		}
		if tr.Task != inst.InstanceID {
			return Task{}, nil, fmt.Errorf("bench: trajectory of %s given for instance %s", tr.Task, inst.InstanceID)
		}
	} else {
		t = Task{ID: tr.Task, Repository: repo}
	}
	t.Source, t.Workdir = tr.Format, tr.Workdir
	var skips []trajectory.Skip
	note := func(reason string) {
		skips = append(skips, trajectory.Skip{Source: tr.Format, Record: tr.Task, Reason: reason})
	}
	var all [][]chat.Message
	for _, turn := range tr.Turns {
		all = append(all, trajectory.Steps(turn.Messages)...)
	}
	if len(all) < 2 {
		return Task{}, skips, fmt.Errorf("bench: task %s: %d steps recorded, want at least 2", t.ID, len(all))
	}
	last := all[len(all)-1]
	submit := Stage{Request: submitRequest(t.ID), Submit: true, Messages: slices.Clone(last)}
	if len(tr.Turns) == 1 {
		work := all[:len(all)-1]
		reqs := []Stage{{Request: issueRequest(repo, tr.Turns[0].Request)}}
		if inst != nil {
			reqs = t.Stages[:len(t.Stages)-1] // the issue, and hints if any
		}
		if len(reqs) == 2 && len(work) >= 2 {
			half := (len(work) + 1) / 2
			reqs[0].Messages = slices.Concat(work[:half]...)
			reqs[1].Messages = slices.Concat(work[half:]...)
		} else {
			if len(reqs) == 2 {
				note("hints stage dropped: too few steps to share")
			}
			reqs = reqs[:1]
			reqs[0].Messages = slices.Concat(work...)
		}
		t.Stages = append(reqs, submit)
	} else {
		t.Stages = nil
		for i, turn := range tr.Turns {
			ms := turn.Messages
			if i == len(tr.Turns)-1 {
				ms = ms[:len(ms)-len(last)]
			}
			req := turn.Request
			if i == 0 {
				req = fmt.Sprintf("In the checkout %s: %s", CheckoutPlaceholder, req)
			}
			if !trajectory.HasAssistant(ms) {
				note(fmt.Sprintf("turn %d dropped: no assistant message", i))
				continue
			}
			t.Stages = append(t.Stages, Stage{Request: req, Messages: slices.Clone(ms)})
		}
		t.Stages = append(t.Stages, submit)
		if inst == nil {
			t.Verifier.ChangedFiles = editedFiles(tr)
		}
	}
	if err := t.Validate(); err != nil {
		return Task{}, skips, fmt.Errorf("bench: %w", err)
	}
	return t, skips, nil
}

// editedFiles lists the files the trajectory's edit and write calls touched,
// relative to its Workdir.
func editedFiles(tr *chat.Trajectory) []string {
	var files []string
	for _, turn := range tr.Turns {
		for _, m := range turn.Messages {
			for _, c := range m.ToolCalls {
				if c.Function.Name != "edit" && c.Function.Name != "write" {
					continue
				}
				var a struct {
					FilePath string `json:"filePath"`
				}
				if json.Unmarshal([]byte(c.Function.Arguments), &a) != nil || a.FilePath == "" {
					continue
				}
				f := path.Clean(a.FilePath)
				if tr.Workdir != "" {
					rel, ok := strings.CutPrefix(f, tr.Workdir+"/")
					if !ok {
						continue
					}
					f = rel
				}
				if !slices.Contains(files, f) {
					files = append(files, f)
				}
			}
		}
	}
	return files
}
