package proxy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/router"
	"github.com/rcm-dev/rcm/transcript"
)

// methodParent: a subagent call takes its parent session's current task.
const methodParent = "parent"

// route decides the task of the call and rebuilds the body to forward only
// that task's turns. Labels come from the store (read in one View); new
// decisions are kept on the assembly and written after the response.
func (h *Handler) route(r *http.Request, a *assembly) error {
	t := a.transcript
	if t.Kind == transcript.Subagent {
		// A subagent works for its parent session's current task: its
		// whole context is that task's and goes out as sent.
		if task := h.store.Unordered(r.Header.Get("X-Parent-Session-Id")).Task(); task != "" {
			a.task, a.confidence, a.method, a.routed = task, 1, methodParent, true
			return nil
		}
	}
	a.clock.route = time.Now()
	fps := t.Fingerprints()
	prior := make([]router.Prior, len(fps))
	var known []string
	// After a compaction the history no longer shows the tasks: the
	// router matches them by their seeds and continues the latest.
	compacted := slices.ContainsFunc(t.Turns, func(tn transcript.Turn) bool { return tn.Kind == transcript.Summary })
	var seeds map[string]string
	var last string
	if a.session != "" {
		// Everything the call routes on, in one read transaction; rcm
		// mode's frozen records too, since which of them it needs depends
		// on the decision.
		err := h.store.ViewWith(a.call.Reads(), func(v *memory.View) error {
			labels, found, err := v.Labels(a.session, fps)
			if err != nil {
				return fmt.Errorf("load labels: %w", err)
			}
			for i, l := range labels {
				if found[i] {
					prior[i] = router.Prior{Known: true, Task: l.Task, Confidence: l.Confidence, Method: l.Method, Routed: l.Routed}
				}
			}
			tasks, err := v.Tasks(a.session)
			if err != nil {
				return fmt.Errorf("load tasks: %w", err)
			}
			for _, tk := range tasks {
				known = append(known, tk.ID)
			}
			if compacted {
				if seeds, err = readSeeds(v, a.session, tasks); err != nil {
					return err
				}
				if last, err = v.LastTask(a.session); err != nil {
					return fmt.Errorf("load the latest task: %w", err)
				}
			}
			if a.mode == RCM {
				if a.frozen, err = v.Frozen(a.session, fps); err != nil {
					return fmt.Errorf("load frozen records: %w", err)
				}
				// A turn routed before keeps its task: the call reads
				// that task's record after the answer, so read it now.
				if cur := len(fps) - 1; cur >= 0 && found[cur] && labels[cur].Routed {
					r := &taskRecord{task: labels[cur].Task}
					if r.rec, r.found, err = v.Record(a.session, r.task); err != nil {
						return fmt.Errorf("load record: %w", err)
					}
					a.record = r
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	plan, err := h.router.Route(r.Context(), t, prior, router.Options{
		Threshold: a.threshold,
		Task:      r.Header.Get(HeaderTask),
		Tasks:     known,
		Seeds:     seeds,
		Last:      last,
	})
	a.clock.routed = time.Now()
	if err != nil {
		return fmt.Errorf("route: %w", err)
	}
	a.plan = &plan
	a.fps = fps
	a.prior = prior
	a.knownTasks = known
	a.task, a.confidence, a.method, a.routed = plan.Current.Task, plan.Current.Confidence, plan.Current.Method, true
	if plan.Fallback {
		// Z_t is every task: the history goes out whole, as the harness sent it.
		a.fallback = FallbackThreshold
		return nil
	}
	edit := transcript.Edit{Keep: t.Keep(plan.Keep)}
	if a.mode == RCM {
		if edit, err = h.remember(r.Context(), a, edit); err != nil {
			return err
		}
	}
	body, err := t.Rebuild(edit)
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	a.body, a.kept = body, edit.Keep
	return nil
}

// newTasks lists the tasks the call opened, each named by the request
// that opened it.
func newTasks(a *assembly) []memory.Task {
	if a.plan == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, id := range a.knownTasks {
		seen[id] = true
	}
	var out []memory.Task
	for i, d := range a.plan.Turns {
		if d.Task != "" && d.Routed && !seen[d.Task] {
			seen[d.Task] = true
			out = append(out, memory.Task{ID: d.Task, Name: title(a.transcript, i), Created: a.at})
		}
	}
	return out
}

// newLabels lists the decisions of this call to persist: those the store
// does not hold, or holds as a fallback that this call changed.
func newLabels(a *assembly) ([]transcript.Fingerprint, []memory.Label) {
	if a.plan == nil {
		return nil, nil
	}
	var fps []transcript.Fingerprint
	var labels []memory.Label
	for i, d := range a.plan.Turns {
		p := a.prior[i]
		if d.Task == "" || p.Known && p.Routed || p.Known && p.Task == d.Task && p.Routed == d.Routed {
			continue
		}
		fps = append(fps, a.fps[i])
		labels = append(labels, memory.Label{Task: d.Task, Confidence: d.Confidence, Method: d.Method, Routed: d.Routed, At: a.at})
	}
	return fps, labels
}

// readSeeds describes each task by its record (checkout, requests), for a
// call whose history compaction has replaced with a summary: the records
// are then the only account of the tasks the router can match a request
// against. A task with no record (router mode writes none) is described by
// its name, its first request's first line; without any description the
// router would have nothing to route on for the rest of the session.
func readSeeds(v *memory.View, session string, tasks []memory.Task) (map[string]string, error) {
	recs, err := v.Records(session)
	if err != nil {
		return nil, fmt.Errorf("load records: %w", err)
	}
	seeds := make(map[string]string, len(tasks))
	for _, tk := range tasks {
		if tk.Name != "" {
			seeds[tk.ID] = tk.Name
		}
	}
	for _, rec := range recs {
		var b strings.Builder
		b.WriteString(rec.Workspace)
		for _, q := range rec.Requirements {
			b.WriteString("\n")
			b.WriteString(q.Text)
		}
		seeds[rec.Task] = b.String()
	}
	return seeds, nil
}
