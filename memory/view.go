package memory

import (
	"cmp"
	"slices"

	"github.com/rcm-dev/rcm/transcript"
)

// View is one read transaction: what a model call routes on, read at one
// point in time and at the cost of one transaction (Store.View). Its
// methods read as Store's do; like every read here, what they return is
// copied out of the transaction. A view with Pending writes (ViewWith)
// reads the store as those writes will leave it.
type View struct {
	r       reader
	ps      []*Pending
	checked bool // whether ps holds only those not committed (View.pending)
}

// View runs fn in one read transaction.
func (s *Store) View(fn func(*View) error) error {
	return s.ViewWith(nil, fn)
}

// ViewWith runs fn in one read transaction that reads the session of ps
// (one session's, in the order made; none: a plain View) as if their
// writes had committed.
func (s *Store) ViewWith(ps []*Pending, fn func(*View) error) error {
	return s.view("read", func(r reader) error { return fn(&View{r: r, ps: ps}) })
}

// Session is Store.Session within the view.
func (v *View) Session(id string) (Session, bool, error) { return v.r.session(id) }

// CountTurns sets the Turns of each of tasks to the number of session's
// turns routed to it (stored labels with Routed set).
func (v *View) CountTurns(session string, tasks []Task) error {
	n, err := v.r.routed(session)
	if err != nil {
		return err
	}
	for i := range tasks {
		tasks[i].Turns = n[tasks[i].ID]
	}
	return nil
}

// Events is Store.Events within the view.
func (v *View) Events(session string, limit int) ([]Event, error) {
	return v.r.events(session, limit)
}

// LastTask is the task of the session's latest event that names one, of
// an agent call (not a compaction), among its last 50: from the pending
// writes still to commit when one names a task, else from the store. A
// replica's own pending writes that have committed are read from the
// store, where another replica's later writes may follow them.
func (v *View) LastTask(session string) (string, error) {
	ps, err := v.pending(session)
	if err != nil {
		return "", err
	}
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].task != "" {
			return ps[i].task, nil
		}
	}
	evs, err := v.r.events(session, 50)
	if err != nil {
		return "", err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Task != "" && evs[i].Kind != transcript.Compaction.String() {
			return evs[i].Task, nil
		}
	}
	return "", nil
}

// Labels is Store.Labels within the view.
func (v *View) Labels(session string, fps []transcript.Fingerprint) ([]Label, []bool, error) {
	labels, found, err := v.r.labels(session, fps)
	if err != nil {
		return labels, found, err
	}
	ps, err := v.pending(session)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range ps {
		for i, fp := range fps {
			if l, ok := p.labels[fp]; ok && !(found[i] && labels[i].Routed) {
				labels[i], found[i] = l, true
			}
		}
	}
	return labels, found, nil
}

// Tasks is Store.Tasks within the view.
func (v *View) Tasks(session string) ([]Task, error) {
	out, err := v.r.tasks(session)
	if err != nil {
		return nil, err
	}
	ps, err := v.pending(session)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		out = merge(out, p.tasks, func(t Task) string { return t.ID })
	}
	sortTasks(out)
	return out, nil
}

// Records is Store.Records within the view.
func (v *View) Records(session string) ([]Record, error) {
	out, err := v.r.records(session)
	if err != nil {
		return nil, err
	}
	ps, err := v.pending(session)
	if err != nil || len(ps) == 0 {
		return out, err
	}
	for _, p := range ps {
		out = merge(out, p.records, func(r Record) string { return r.Task })
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.Task, b.Task) })
	return out, nil
}

// Record is Store.Record within the view.
func (v *View) Record(session, task string) (Record, bool, error) {
	ps, err := v.pending(session)
	if err != nil {
		return Record{}, false, err
	}
	for i := len(ps) - 1; i >= 0; i-- {
		if r, ok := ps[i].records[task]; ok {
			return r, true, nil
		}
	}
	return v.r.record(session, task)
}

// merge replaces the values of stored that put holds under their key and
// adds the rest of put: a put replaces what the store holds.
func merge[T any](stored []T, put map[string]T, key func(T) string) []T {
	if len(put) == 0 {
		return stored
	}
	seen := make(map[string]bool, len(put))
	for i, v := range stored {
		if p, ok := put[key(v)]; ok {
			stored[i], seen[key(v)] = p, true
		}
	}
	for k, v := range put {
		if !seen[k] {
			stored = append(stored, v)
		}
	}
	return stored
}

// Frozen holds memory messages frozen for turns, by task and turn.
type Frozen map[string]map[transcript.Fingerprint][]byte

// At is Store.FrozenAt of the turns fps of task, from f.
func (f Frozen) At(task string, fps []transcript.Fingerprint) (msgs [][]byte, found []bool) {
	msgs, found = make([][]byte, len(fps)), make([]bool, len(fps))
	for i, fp := range fps {
		msgs[i], found[i] = f[task][fp]
	}
	return msgs, found
}

// Frozen returns the messages frozen for any of the turns fps, whatever
// their task: a call reads them before it knows its task. It reads every
// key of the session's frozen messages (each task keeps at most maxFrozen)
// and copies only those of fps.
func (v *View) Frozen(session string, fps []transcript.Fingerprint) (Frozen, error) {
	// Every put of the pending writes, by task, in order.
	var put map[string][]frozenPut
	ps, err := v.pending(session)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		for task, puts := range p.frozen {
			if put == nil {
				put = map[string][]frozenPut{}
			}
			put[task] = append(put[task], puts...)
		}
	}
	if len(fps) == 0 {
		return nil, nil
	}
	want := make(map[transcript.Fingerprint]bool, len(fps))
	for _, fp := range fps {
		want[fp] = true
	}
	out := Frozen{}
	// Every stored turn of the tasks put, with its sequence number: the
	// puts prune the oldest.
	held := map[string][]heldFrozen{}
	err = v.r.frozen(session, func(task string, fp transcript.Fingerprint, seq uint64, msg func() ([]byte, bool)) {
		if _, ok := put[task]; ok {
			held[task] = append(held[task], heldFrozen{fp, seq})
		}
		if !want[fp] {
			return
		}
		if m, ok := msg(); ok {
			out.add(task, fp, m)
		}
	})
	if err != nil {
		return nil, err
	}
	for task, puts := range put {
		out.put(task, puts, held[task], want)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// heldFrozen is a stored frozen message's turn and sequence number.
type heldFrozen struct {
	fp  transcript.Fingerprint
	seq uint64
}

func (f Frozen) add(task string, fp transcript.Fingerprint, msg []byte) {
	if f[task] == nil {
		f[task] = map[transcript.Fingerprint][]byte{}
	}
	f[task][fp] = msg
}

// put applies puts of task to f as PutFrozen does to the store that holds
// held, one after the other: a turn's first message stays, and each put
// drops the oldest beyond maxFrozen (a turn dropped and put again takes
// the new message). Only the turns in want are kept in f.
func (f Frozen) put(task string, puts []frozenPut, held []heldFrozen, want map[transcript.Fingerprint]bool) {
	slices.SortFunc(held, func(a, b heldFrozen) int { return cmp.Compare(a.seq, b.seq) })
	// live is the task's turns oldest first; put[i] is the put that froze
	// live[i], nil for a stored one.
	live := make([]transcript.Fingerprint, len(held))
	put := make([]*frozenPut, len(held))
	for i, h := range held {
		live[i] = h.fp
	}
	for i := range puts {
		if slices.Contains(live, puts[i].fp) {
			continue
		}
		live, put = append(live, puts[i].fp), append(put, &puts[i])
		if n := len(live) - maxFrozen; n > 0 {
			for _, fp := range live[:n] {
				delete(f[task], fp)
			}
			live, put = live[n:], put[n:]
		}
	}
	for i, p := range put {
		if p != nil && want[live[i]] {
			f.add(task, live[i], p.msg)
		}
	}
}
