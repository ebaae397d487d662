package proxy

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rcm-dev/rcm/compaction"
	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/router"
	"github.com/rcm-dev/rcm/transcript"
)

// remember adds what rcm mode adds to a routed context: post-compaction
// summaries scoped to the task, the task's state records (each placed at
// the start of a run of the task and frozen there), and the fit to
// --context-tokens.
func (h *Handler) remember(ctx context.Context, a *assembly, e transcript.Edit) (transcript.Edit, error) {
	t := a.transcript
	cur := len(t.Turns) - 1
	var places []place
	if a.task != "" {
		ids := a.taskIDs()
		for _, ti := range a.plan.Keep {
			turn := t.Turns[ti]
			if turn.Kind != transcript.Summary {
				continue
			}
			sections := compaction.SplitSummary(compaction.SummaryText(t, ti), ids)
			if rep, ok := compaction.ScopeSummary(t, ti, a.task, sections); ok {
				if e.Replace == nil {
					e.Replace = map[int][]byte{}
				}
				for i, raw := range rep {
					e.Replace[i] = raw
				}
			}
		}
		for _, i := range t.Summaries() {
			sections := compaction.SplitSummary(t.Messages[i].Text(), ids)
			if raw, ok := compaction.ScopeMessage(t, i, a.task, sections); ok {
				if e.Replace == nil {
					e.Replace = map[int][]byte{}
				}
				e.Replace[i] = raw
			}
		}
		var err error
		if places, err = h.records(a, cur); err != nil {
			return e, err
		}
		if n := len(places); n > 0 {
			// The inspector shows the latest run's record, the one this
			// call's request reads.
			a.injected = places[n-1].msg
		}
	}
	return h.fit(a, e, places, cur)
}

// place is a record message and the turn it goes before.
type place struct {
	turn int
	msg  []byte
}

// records returns the task's record messages in the routed context. A
// record goes at the start of a run of the task (its first turn, or one
// after another task's turn or a post-compaction summary): there the
// history the model reads lacks what the record says, while within a run
// it holds it. The record of the current run is rendered on the run's first
// routed call and frozen; every later call of the session finds each run's
// record where it was first sent, so the contexts of a run are append-only
// and a switch is the only place a new prefix starts. An earlier run start
// whose record was never sent (empty, or its run fell back throughout)
// stays without one.
func (h *Handler) records(a *assembly, cur int) ([]place, error) {
	starts := runStarts(a.transcript, a.plan, a.task, cur)
	if len(starts) == 0 {
		return nil, nil
	}
	fps := make([]transcript.Fingerprint, len(starts))
	for i, ti := range starts {
		fps[i] = a.fps[ti]
	}
	msgs, found := a.frozen.At(a.task, fps)
	var places []place
	var err error
	for i, ti := range starts {
		msg := msgs[i]
		if !found[i] {
			// Only the current run's start gets a record now: at its
			// request (or later, when that turn's calls fell back and the
			// history went out whole; this call drops turns before it, so
			// its prefix changes before the record anyway).
			if i != len(starts)-1 {
				continue
			}
			if msg, err = h.render(a, ti, h.cfg.MemoryTokens); err != nil {
				return nil, err
			}
		}
		if len(msg) > 0 {
			places = append(places, place{ti, msg})
		}
	}
	return places, nil
}

// runStarts lists the kept turns before which a record of task may stand,
// ascending: the first request turn of each run of the task's request
// turns, up to the current turn's run when the current turn opens one or
// continues one.
func runStarts(t *transcript.Transcript, plan *router.Plan, task string, cur int) []int {
	kept := make(map[int]bool, len(plan.Keep))
	for _, ti := range plan.Keep {
		kept[ti] = true
	}
	ours := func(ti int) bool {
		return t.Turns[ti].Kind == transcript.Request && ti < len(plan.Turns) && plan.Turns[ti].Task == task
	}
	var starts []int
	for ti := 0; ti <= cur && ti < len(t.Turns); ti++ {
		if kept[ti] && ours(ti) && (ti == 0 || !ours(ti-1)) {
			starts = append(starts, ti)
		}
	}
	return starts
}

// render renders the task's record as a message of at most tokens tokens,
// to be frozen before turn ti after the response, with the brief of the
// other tasks whose turns the call leaves out, so that a request building
// on their work still reads it (an empty message when there is nothing to
// say, so that later calls add none there either).
func (h *Handler) render(a *assembly, ti, tokens int) ([]byte, error) {
	rec, found, others, err := h.runRecords(a)
	if err != nil {
		return nil, err
	}
	if !found {
		rec = memory.Record{Task: a.task}
	}
	msg := memory.Message(rec, others, tokens)
	if msg == nil {
		msg = []byte{}
	}
	a.freeze = append(a.freeze, memory.Freeze{Fp: a.fps[ti], Msg: msg})
	return msg, nil
}

// runRecords reads, in one read, the task's record (kept as taskRecord
// would) and those of the other tasks whose routed turns the call leaves
// out, the most recently worked first, each with requirements, and the
// room of their brief: half the bytes of those turns.
func (h *Handler) runRecords(a *assembly) (memory.Record, bool, memory.Others, error) {
	var all []memory.Record
	if err := h.store.ViewWith(a.call.Reads(), func(v *memory.View) (err error) {
		all, err = v.Records(a.session)
		return err
	}); err != nil {
		return memory.Record{}, false, memory.Others{}, err
	}
	r := &taskRecord{task: a.task}
	byTask := make(map[string]memory.Record, len(all))
	for _, rec := range all {
		byTask[rec.Task] = rec
		if rec.Task == a.task {
			r.rec, r.found = rec, true
		}
	}
	a.record = r
	kept := make(map[int]bool, len(a.plan.Keep))
	for _, ti := range a.plan.Keep {
		kept[ti] = true
	}
	var o memory.Others
	seen := map[string]bool{a.task: true}
	t := a.transcript
	for ti := len(a.plan.Turns) - 1; ti >= 0; ti-- {
		d := a.plan.Turns[ti]
		if kept[ti] || !d.Routed {
			continue
		}
		for k := t.Turns[ti].Start; k < t.Turns[ti].End; k++ {
			o.Bytes += len(t.Messages[k].Raw)
		}
		if seen[d.Task] {
			continue
		}
		seen[d.Task] = true
		if rec, ok := byTask[d.Task]; ok && len(rec.Requirements) > 0 {
			o.Records = append(o.Records, rec)
		}
	}
	// Half: a call that leaves other tasks out still saves at least half
	// of what router mode saves.
	o.Bytes /= 2
	return r.rec, r.found, o, nil
}

// fit keeps the context within --context-tokens. The records go in as
// placed; when the fit has to drop turns, the records of dropped runs go
// with them, and the record stands before the first turn kept instead
// (frozen there like a run's), since the history no longer holds what it
// says. Room for it is kept by fitting the rest to the budget less the
// record's (at most a quarter of the budget).
func (h *Handler) fit(a *assembly, e transcript.Edit, places []place, cur int) (transcript.Edit, error) {
	t, budget := a.transcript, h.cfg.ContextTokens
	reserve := 0
	if a.task != "" {
		reserve = min(h.cfg.MemoryTokens, budget/4)
	}
	out, rep := compaction.Fit(t, withRecords(t, e, places), budget, reserve, cur)
	a.fit = rep
	if rep.Dropped == 0 || a.task == "" {
		return out, nil
	}
	kept := make(map[int]bool, len(out.Keep))
	for _, i := range out.Keep {
		kept[i] = true
	}
	first := -1
	var left []place
	for _, p := range places {
		if kept[t.Turns[p.turn].Start] {
			left = append(left, p)
		}
	}
	for ti := 0; ti <= cur; ti++ {
		if tr := t.Turns[ti]; kept[tr.Start] {
			first = ti
			break
		}
	}
	if first >= 0 && (len(left) == 0 || left[0].turn != first) {
		msgs, found := a.frozen.At(a.task, []transcript.Fingerprint{a.fps[first]})
		msg := msgs[0]
		if !found[0] {
			var err error
			if msg, err = h.render(a, first, reserve); err != nil {
				return e, err
			}
		}
		if len(msg) > 0 {
			left = append([]place{{first, msg}}, left...)
		}
	}
	out.Insert = withRecords(t, transcript.Edit{Insert: e.Insert}, left).Insert
	return out, nil
}

// withRecords returns e with the records inserted where they are placed.
func withRecords(t *transcript.Transcript, e transcript.Edit, places []place) transcript.Edit {
	if len(places) == 0 {
		return e
	}
	ins := slices.Clone(e.Insert)
	for _, p := range places {
		ins = append(ins, transcript.Insert{Before: t.Turns[p.turn].Start, Raw: p.msg})
	}
	slices.SortStableFunc(ins, func(x, y transcript.Insert) int { return cmp.Compare(x.Before, y.Before) })
	e.Insert = ins
	return e
}

// taskRecord returns the record of the call's task through the writes
// before (the session's earlier ones), read once a call: with the labels
// when they named the current turn's task (route), else on first use. The
// record may change before the call's writes (a memory-model summary
// lands): observe checks its version.
func (h *Handler) taskRecord(a *assembly, before []*memory.Pending) (memory.Record, bool, error) {
	if r := a.record; r != nil && r.task == a.task {
		return r.rec, r.found, nil
	}
	r := &taskRecord{task: a.task}
	err := h.store.ViewWith(before, func(v *memory.View) (err error) {
		r.rec, r.found, err = v.Record(a.session, a.task)
		return err
	})
	if err != nil {
		return memory.Record{}, false, err
	}
	a.record = r
	return r.rec, r.found, nil
}

// taskRecord is a task's record as a call read it.
type taskRecord struct {
	task  string
	rec   memory.Record
	found bool
}

// taskIDs lists every task the session holds, from the store and this call.
func (a *assembly) taskIDs() []string {
	ids := append([]string(nil), a.knownTasks...)
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	if a.plan != nil {
		for _, d := range a.plan.Turns {
			if d.Task != "" && !seen[d.Task] {
				seen[d.Task] = true
				ids = append(ids, d.Task)
			}
		}
	}
	return ids
}

// rewriteCompaction makes the harness's compaction call task-aware: one
// summary section per task, with requirements and unfinished items from the
// records, so that no task's open state is lost.
func (h *Handler) rewriteCompaction(a *assembly) error {
	if a.session == "" {
		return nil
	}
	var recs []memory.Record
	err := h.store.ViewWith(a.call.Reads(), func(v *memory.View) (err error) {
		recs, err = v.Records(a.session)
		return err
	})
	if err != nil {
		return err
	}
	active := a.call.Task()
	states := make([]compaction.TaskState, len(recs))
	for i, r := range recs {
		states[i] = taskState(r, r.Task == active)
		a.knownTasks = append(a.knownTasks, r.Task)
	}
	e, err := compaction.Rewrite(a.transcript, states)
	if err != nil {
		return fmt.Errorf("rewrite compaction: %w", err)
	}
	body, err := a.transcript.Rebuild(e)
	if err != nil {
		return fmt.Errorf("rebuild compaction: %w", err)
	}
	a.body = body
	return nil
}

// taskState is what the compaction rewrite keeps of a task's record.
func taskState(r memory.Record, active bool) compaction.TaskState {
	ts := compaction.TaskState{ID: r.Task, Active: active, Workspace: r.Workspace, Unfinished: r.Unfinished, FilesChanged: r.FilesChanged}
	for _, q := range r.Requirements {
		ts.Requirements = append(ts.Requirements, compaction.Requirement{Text: q.Text, Amends: q.Amends})
	}
	if lt := r.LastTest; lt != nil {
		ts.LastTest = lt.Cmd + " " + lt.Outcome
	}
	return ts
}

// observes says whether the call updates its task's record and frozen
// messages.
func (a *assembly) observes() bool {
	return a.transcript.Kind != transcript.Compaction && a.task != "" && a.plan != nil && a.fallback == FallbackNone
}

// observation is what the call shows about its task: the task's turns of
// the transcript and the answer.
func (a *assembly) observation() memory.Observation {
	var turns []int
	for i, d := range a.plan.Turns {
		if d.Task == a.task {
			turns = append(turns, i)
		}
	}
	return memory.Observation{Transcript: a.transcript, Turns: turns, Response: a.resp.Bytes(), SSE: a.sse, Status: a.status}
}

// summarize asks the optional memory model for the task's progress once a
// turn ends (the answer calls no tool), after the record is written; its
// failure leaves the deterministic record.
func (h *Handler) summarize(a *assembly) error {
	if h.summarizer == nil || !a.observes() {
		return nil
	}
	reply, ok := a.transcript.Format.ParseReply(a.resp.Bytes(), a.sse)
	if !ok || len(reply.ToolCalls) > 0 {
		return nil
	}
	rec, _, err := h.store.Record(a.session, a.task)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	summary, err := h.summarizer.Summarize(ctx, rec, reply.Text())
	if err != nil {
		h.log.Info("memory model failed; the deterministic record stays", "session", a.session, "task", a.task, "err", err)
		return nil
	}
	return h.store.UpdateRecord(a.session, a.task, func(r *memory.Record) error {
		r.Summary = summary
		return nil
	})
}

// summarySections splits a compaction call's summary by task (none when
// the session has fewer than two tasks or the answer has no text), once:
// the call's writes and the next call's read ahead of them both need it.
func summarySections(a *assembly) map[string]string {
	a.summary.Do(func() {
		if reply, ok := a.transcript.Format.ParseReply(a.resp.Bytes(), a.sse); ok && len(a.knownTasks) >= 2 {
			a.sections = compaction.SplitSummary(reply.Text(), a.knownTasks)
		}
	})
	return a.sections
}
