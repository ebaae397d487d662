package spec

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path"
	"slices"

	"github.com/rcm-dev/rcm/bench/trajectory"
)

// Near reports whether two tasks' changed files share a parent directory:
// some file of a and some file of b sit in the same directory (the
// immediate parent, e.g. django/db/models/sql for query.py and compiler.py).
func Near(a, b *Task) bool {
	for _, f := range a.Verifier.ChangedFiles {
		for _, g := range b.Verifier.ChangedFiles {
			if path.Dir(f) == path.Dir(g) {
				return true
			}
		}
	}
	return false
}

// Disjoint reports whether two tasks change no file in common.
func Disjoint(a, b *Task) bool {
	return overlap(a.Verifier.ChangedFiles, b.Verifier.ChangedFiles) == ""
}

// Assemble builds sessions by the Switch-SWE rule. For each focus task A
// (in id order) the candidates are the other tasks of A's repository whose
// changed files are disjoint from A's (tasks with no known changed files
// take no part). Two sessions are built where the candidates allow:
//
//   - "<A>/near": one candidate that is near A (shares a parent directory)
//     and three more from all remaining candidates; a session is near when
//     any distractor is near;
//   - "<A>/far": four candidates none of which is near A.
//
// The choices, the distractor order of S_switch and the assignment of the
// five tasks to ws1..ws5 come from a PCG stream seeded by seed and the
// session id, so the result depends only on the tasks and the seed. Focus
// tasks without enough candidates for a kind are reported, not built.
func Assemble(tasks []Task, seed uint64) ([]Session, []trajectory.Skip) {
	sorted := make([]*Task, len(tasks))
	for i := range tasks {
		sorted[i] = &tasks[i]
	}
	slices.SortStableFunc(sorted, func(a, b *Task) int { return cmp.Compare(a.ID, b.ID) })
	var out []Session
	var skips []trajectory.Skip
	note := func(id, reason string) {
		skips = append(skips, trajectory.Skip{Source: "assemble", Record: id, Reason: reason})
	}
	for _, a := range sorted {
		if len(a.Verifier.ChangedFiles) == 0 {
			note(a.ID, "no changed files: cannot check disjointness")
			continue
		}
		var near, far []*Task
		for _, b := range sorted {
			if b == a || b.ID == a.ID || b.Repository != a.Repository || len(b.Verifier.ChangedFiles) == 0 || !Disjoint(a, b) {
				continue
			}
			if Near(a, b) {
				near = append(near, b)
			} else {
				far = append(far, b)
			}
		}
		if len(near) > 0 && len(near)+len(far) >= 4 {
			rng := sessionRand(seed, a.ID+"/"+KindNear)
			rng.Shuffle(len(near), func(i, j int) { near[i], near[j] = near[j], near[i] })
			rest := slices.Concat(near[1:], far)
			rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
			out = append(out, newSession(a, append([]*Task{near[0]}, rest[:3]...), KindNear, seed, rng))
		} else {
			note(a.ID, fmt.Sprintf("no near session: %d near and %d far candidates", len(near), len(far)))
		}
		if len(far) >= 4 {
			rng := sessionRand(seed, a.ID+"/"+KindFar)
			far = slices.Clone(far)
			rng.Shuffle(len(far), func(i, j int) { far[i], far[j] = far[j], far[i] })
			out = append(out, newSession(a, far[:4], KindFar, seed, rng))
		} else {
			note(a.ID, fmt.Sprintf("no far session: %d far candidates", len(far)))
		}
	}
	return out, skips
}

func sessionRand(seed uint64, id string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(id))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// newSession shuffles the distractor order and deals the checkouts.
func newSession(a *Task, ds []*Task, kind string, seed uint64, rng *rand.Rand) Session {
	ds = slices.Clone(ds)
	rng.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
	s := Session{
		ID: a.ID + "/" + kind, Focus: a.ID, Kind: kind, Seed: seed,
		Workspaces: map[string]string{},
		Base:       baseSchedule(a),
		Switch:     switchSchedule(a, ds),
	}
	perm := rng.Perm(len(Workspaces))
	s.Workspaces[a.ID] = Workspaces[perm[0]]
	for i, d := range ds {
		s.Distractors = append(s.Distractors, d.ID)
		s.Workspaces[d.ID] = Workspaces[perm[i+1]]
	}
	return s
}

// NewSpec assembles the sessions of tasks with the given seed and returns
// the validated spec, with the assembly's notes.
func NewSpec(name string, tasks []Task, seed uint64) (*Spec, []trajectory.Skip, error) {
	sessions, skips := Assemble(tasks, seed)
	s := &Spec{Version: Version, Name: name, Tasks: tasks, Sessions: sessions}
	if err := s.Validate(); err != nil {
		return nil, skips, fmt.Errorf("bench: %w", err)
	}
	return s, skips, nil
}
