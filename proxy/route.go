package proxy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

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
		if task := h.lastTask(r.Header.Get("X-Parent-Session-Id")); task != "" {
			a.task, a.confidence, a.method, a.routed = task, 1, methodParent, true
			return nil
		}
	}
	fps := t.Fingerprints()
	prior := make([]router.Prior, len(fps))
	var known []string
	if a.session != "" {
		labels, found, err := h.store.Labels(a.session, fps)
		if err != nil {
			return fmt.Errorf("load labels: %w", err)
		}
		for i, l := range labels {
			if found[i] {
				prior[i] = router.Prior{Known: true, Task: l.Task, Confidence: l.Confidence, Method: l.Method, Routed: l.Routed}
			}
		}
		tasks, err := h.store.Tasks(a.session)
		if err != nil {
			return fmt.Errorf("load tasks: %w", err)
		}
		for _, tk := range tasks {
			known = append(known, tk.ID)
		}
	}
	seeds, err := h.seeds(a.session, t)
	if err != nil {
		return err
	}
	plan, err := h.router.Route(r.Context(), t, prior, router.Options{
		Threshold: a.threshold,
		Task:      r.Header.Get(HeaderTask),
		Tasks:     known,
		Seeds:     seeds,
	})
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

// saveLabels persists the decisions of this call that the store does not
// hold yet (or that were fallbacks), and every task first routed here. A
// fallback's guessed task is not recorded as a task: the next call of the
// turn guesses afresh and must be free to give it the same id.
func saveLabels(w *memory.Tx, a *assembly) error {
	if a.plan == nil {
		return nil
	}
	var fps []transcript.Fingerprint
	var labels []memory.Label
	seen := map[string]bool{}
	for _, id := range a.knownTasks {
		seen[id] = true
	}
	for i, d := range a.plan.Turns {
		if d.Task != "" && d.Routed && !seen[d.Task] {
			seen[d.Task] = true
			if err := w.PutTask(a.session, memory.Task{ID: d.Task, Name: d.Task, Created: a.at}); err != nil {
				return err
			}
		}
		p := a.prior[i]
		if d.Task == "" || p.Known && p.Routed || p.Known && p.Task == d.Task && p.Routed == d.Routed {
			continue
		}
		fps = append(fps, a.fps[i])
		labels = append(labels, memory.Label{Task: d.Task, Confidence: d.Confidence, Method: d.Method, Routed: d.Routed, At: a.at})
	}
	if len(fps) == 0 {
		return nil
	}
	return w.PutLabels(a.session, fps, labels)
}

// seeds describes each task by its record (checkout, requests) once
// compaction has replaced the history with a summary: the records are then
// the only account of the tasks the router can match a request against.
func (h *Handler) seeds(session string, t *transcript.Transcript) (map[string]string, error) {
	if session == "" || !slices.ContainsFunc(t.Turns, func(tn transcript.Turn) bool { return tn.Kind == transcript.Summary }) {
		return nil, nil
	}
	recs, err := h.store.Records(session)
	if err != nil {
		return nil, fmt.Errorf("load records: %w", err)
	}
	seeds := make(map[string]string, len(recs))
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
