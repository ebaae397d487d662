package fit

import "slices"

// Ceiling is what a router that put every request in its hand-labelled
// task would drop and lose if a new task kept, besides its own turns,
// those of the task it opened after (Chain: of every task up that line).
// Such a split is softer than a new task's, which keeps nothing: most new
// requests of people's sessions build on the task just before them.
type Ceiling struct {
	Chain    bool
	Requests int     // the requests after each session's first, at their first call
	Dropped  float64 // share of the bytes of unneeded earlier turns (their text) left out
	Lost     float64 // share of the requests missing a turn of a task they need
}

// Ceilings computes both rules, parent only then chain, over the sessions
// of one kind (real or synthetic) from their labels alone.
func Ceilings(sessions []*Session, real bool) []Ceiling {
	var requests, unneeded int
	var dropped, lost [2]int // by rule: parent only, chain
	for _, s := range sessions {
		if s.Real != real {
			continue
		}
		size := make([]int, len(s.Turns))
		for i, tn := range s.Turns {
			size[i] = len(tn.Request)
			for _, m := range tn.Messages {
				size[i] += len(m.Content)
			}
		}
		// A task's parent is the task of the latest request before its
		// first one that is not a command (meta).
		first, parent := map[string]int{}, map[string]string{}
		prev := ""
		for i, g := range s.Gold {
			if _, ok := first[g.Task]; !ok {
				first[g.Task], parent[g.Task] = i, prev
			}
			if g.Kind != KindMeta {
				prev = g.Task
			}
		}
		// kept reports, by rule, whether turn j of task is forwarded with
		// a request of own.
		kept := func(own, task string, j int) [2]bool {
			if task == own {
				return [2]bool{true, true}
			}
			for child, p := own, parent[own]; p != ""; child, p = p, parent[p] {
				if task == p {
					in := j < first[child]
					return [2]bool{in && child == own, in}
				}
			}
			return [2]bool{}
		}
		for i := 1; i < len(s.Gold); i++ {
			g := s.Gold[i]
			requests++
			var missing [2]bool
			for j := range i {
				task := s.Gold[j].Task
				need := task == g.Task || slices.Contains(g.Needs, task)
				in := kept(g.Task, task, j)
				if !need {
					unneeded += size[j]
				}
				for r := range in {
					if !need && !in[r] {
						dropped[r] += size[j]
					}
					missing[r] = missing[r] || need && !in[r]
				}
			}
			for r, m := range missing {
				if m {
					lost[r]++
				}
			}
		}
	}
	out := make([]Ceiling, 2)
	for r := range out {
		out[r] = Ceiling{Chain: r == 1, Requests: requests, Dropped: share(dropped[r], unneeded), Lost: share(lost[r], requests)}
	}
	return out
}
