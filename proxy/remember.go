package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rcm-dev/rcm/compaction"
	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/transcript"
)

// remember adds what rcm mode adds to a routed context: post-compaction
// summaries scoped to the task, the task's state record (frozen for the
// turn), and the fit to --context-tokens.
func (h *Handler) remember(ctx context.Context, a *assembly, e transcript.Edit) (transcript.Edit, error) {
	t := a.transcript
	cur := len(t.Turns) - 1
	if a.task != "" {
		ids := a.taskIDs()
		for _, ti := range a.plan.Keep {
			turn := t.Turns[ti]
			if turn.Kind != transcript.Summary || turn.Start+1 >= turn.End {
				continue
			}
			sections := compaction.SplitSummary(t.Messages[turn.Start+1].Text(), ids)
			if rep, ok := compaction.ScopeSummary(t, ti, a.task, sections); ok {
				if e.Replace == nil {
					e.Replace = map[int][]byte{}
				}
				for i, raw := range rep {
					e.Replace[i] = raw
				}
			}
		}
		msg, err := h.memoryMessage(a, cur)
		if err != nil {
			return e, err
		}
		if len(msg) > 0 {
			e.Insert = append(e.Insert, transcript.Insert{Before: t.Turns[cur].Start, Raw: msg})
		}
	}
	e, rep := compaction.Fit(t, e, h.cfg.ContextTokens, cur)
	a.fit = rep
	return e, nil
}

// memoryMessage returns the task's state record as a message, the same
// bytes for every call of one turn: the first call renders it from the
// store and freezes it after the response (empty when the task has no
// record yet, so that later calls of the turn add none either).
func (h *Handler) memoryMessage(a *assembly, cur int) ([]byte, error) {
	fp := a.fps[cur]
	msg, ok, err := h.store.Frozen(a.session, a.task, fp)
	if err != nil || ok {
		return msg, err
	}
	rec, found, err := h.store.Record(a.session, a.task)
	if err != nil {
		return nil, err
	}
	if found && len(rec.Requirements) > 0 {
		msg = memory.Message(rec, h.cfg.MemoryTokens)
	}
	a.freeze = true
	a.frozen = msg
	return msg, nil
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
	recs, err := h.store.Records(a.session)
	if err != nil {
		return err
	}
	active := h.lastTask(a.session)
	states := make([]compaction.TaskState, len(recs))
	for i, r := range recs {
		states[i] = compaction.TaskState{ID: r.Task, Record: r, Active: r.Task == active}
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

// lastTask is the task of the session's latest routed agent call.
func (h *Handler) lastTask(session string) string {
	evs, err := h.store.Events(session, 50)
	if err != nil {
		return ""
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Task != "" && evs[i].Kind != transcript.Compaction.String() {
			return evs[i].Task
		}
	}
	return ""
}

// observe updates the task's record from the call and its answer (or, for
// a compaction call, every task's record from the summary), within the
// call's write transaction.
func observe(w *memory.Tx, a *assembly) error {
	t := a.transcript
	if t.Kind == transcript.Compaction {
		return attributeSummary(w, a)
	}
	if a.task == "" || a.plan == nil || a.fallback != FallbackNone {
		return nil
	}
	if a.freeze {
		if err := w.PutFrozen(a.session, a.task, a.fps[len(a.fps)-1], a.frozen); err != nil {
			return err
		}
	}
	if a.recordSame {
		return nil
	}
	return w.UpdateRecord(a.session, a.task, func(r *memory.Record) error {
		if a.observed != nil && a.observed.Version == r.Version {
			*r = *a.observed
			return nil
		}
		// The record changed since it was prepared (a summary landed):
		// read the call into the stored one.
		r.Task = a.task
		r.Observe(a.observation(nil))
		r.Updated = a.at
		return nil
	})
}

// observeTimeout bounds the reading of one call into its task's record;
// the turns it leaves are read by the session's next call.
const observeTimeout = 5 * time.Second

// prepareRecord reads the call into a copy of the task's record before the
// write transaction: the store has one writer, and a call of 300k messages
// takes long to read, so other sessions' writes wait only for the put.
// The session's writes are ordered (pending), so only a summary can change
// the record meanwhile; observe checks the version.
func (h *Handler) prepareRecord(a *assembly) error {
	if a.transcript.Kind == transcript.Compaction || a.task == "" || a.plan == nil || a.fallback != FallbackNone {
		return nil
	}
	rec, _, err := h.store.Record(a.session, a.task)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), observeTimeout)
	defer cancel()
	rec.Task = a.task
	before, _ := json.Marshal(rec)
	rec.Observe(a.observation(ctx))
	if after, _ := json.Marshal(rec); bytes.Equal(before, after) {
		// Nothing new (a retried call): the record is not rewritten.
		a.recordSame = true
		return nil
	}
	rec.Updated = a.at
	a.observed = &rec
	return nil
}

// observation is what the call shows about its task: the task's turns of
// the transcript and the answer.
func (a *assembly) observation(ctx context.Context) memory.Observation {
	var turns []int
	for i, d := range a.plan.Turns {
		if d.Task == a.task {
			turns = append(turns, i)
		}
	}
	return memory.Observation{Transcript: a.transcript, Turns: turns, Response: a.resp.Bytes(), SSE: a.sse, Status: a.status, Context: ctx}
}

// summarize asks the optional memory model for the task's progress once a
// turn ends (the answer calls no tool), after the record is written; its
// failure leaves the deterministic record.
func (h *Handler) summarize(a *assembly) error {
	if h.summarizer == nil || a.task == "" || a.plan == nil || a.fallback != FallbackNone {
		return nil
	}
	reply, ok := transcript.ParseReply(a.resp.Bytes(), a.sse)
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

// attributeSummary stores each task's section of a compaction summary in
// that task's record.
func attributeSummary(w *memory.Tx, a *assembly) error {
	reply, ok := transcript.ParseReply(a.resp.Bytes(), a.sse)
	if !ok || len(a.knownTasks) < 2 {
		return nil
	}
	for id, section := range compaction.SplitSummary(reply.Text(), a.knownTasks) {
		if err := w.UpdateRecord(a.session, id, func(r *memory.Record) error {
			r.Task = id
			r.Summary = section
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}
