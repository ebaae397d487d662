package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rcm-dev/rcm/transcript"
)

// Write is what one model call teaches the store, as the proxy works it
// out after the answer: the session's use, the tasks the call opened, its
// turns' labels, the record messages it placed, what it shows of its
// task's work, a compaction's summary by task, and its event. Call.Commit
// stores it in one transaction, after the session's earlier writes, and
// makes it readable by the session's next call before that commits.
type Write struct {
	Session, Parent string
	At              time.Time
	// Tasks are the tasks the call opened; Labels[i] is the decision on
	// the turn Fps[i], stored unless a routed one is.
	Tasks  []Task
	Fps    []transcript.Fingerprint
	Labels []Label
	// Task is the call's task: Freeze are the record messages the call
	// placed before turns of it, frozen there, and Observe (when set) is
	// read into its record.
	Task    string
	Freeze  []Freeze
	Observe *Observation
	// Record is Task's record as the call read it (with its labels), so
	// that it is not read again; nil: Commit reads it.
	Record *Record
	// Sections is a compaction call's summary by task, each stored in that
	// task's record.
	Sections map[string]string
}

// Freeze is a record message placed before the turn Fp, to freeze there.
type Freeze struct {
	Fp  transcript.Fingerprint
	Msg []byte
}

// labelChunk is how many labels one write transaction takes at most
// before the call's own: bbolt has one writer, and other sessions' writes
// wait for the transaction that holds it.
const labelChunk = 4096

// observeTimeout bounds the reading of one call into its task's record;
// the turns it leaves are read by the session's next call.
const observeTimeout = 5 * time.Second

// Commit stores w after the session's earlier writes, with the event
// event returns (called once the record is worked out, so that it may
// wait for what it reports), and returns that event as stored.
//
// The labels of a call with many new turns (a long history seen for the
// first time) go first, in transactions of labelChunk, so that one huge
// call does not hold the store's writer for long; a crash in between
// leaves labels without the record's update, which the next call
// completes (the record reads the turns it has not read). The call is read
// into a copy of its task's record before the transaction, for the same
// reason; only a summary can change the record meanwhile (the session's
// writes are ordered), and the transaction reads the call into the stored
// one when it has.
func (c *Call) Commit(w *Write, event func() Event) (Event, error) {
	saved, err := c.earlyLabels(w)
	if err != nil {
		return Event{}, err
	}
	observed, same, err := c.observe(w)
	if err != nil {
		return Event{}, err
	}
	if c.ordered() {
		c.publish(w.Task, func(p *Pending, before []*Pending) error {
			return c.fill(p, before, w, saved, observed, same)
		})
		c.prev()
	}
	ev := event()
	err = c.queue(func(tx *Tx) error {
		if err := tx.Touch(w.Session, w.Parent, w.At); err != nil {
			return err
		}
		if err := putTasksLabels(tx, w, saved); err != nil {
			return err
		}
		if err := putFrozen(tx, w); err != nil {
			return err
		}
		if err := storeRecord(tx, w, observed, same); err != nil {
			return err
		}
		for id, section := range w.Sections {
			if err := tx.UpdateRecord(w.Session, id, func(r *Record) error {
				r.Task, r.Summary = id, section
				return nil
			}); err != nil {
				return err
			}
		}
		return tx.AppendEvent(w.Session, &ev)
	})()
	return ev, err
}

// writes is what Tx and Pending both take.
type writes interface {
	PutTask(session string, t Task) error
	PutLabels(session string, fps []transcript.Fingerprint, labels []Label) error
	PutFrozen(session, task string, fp transcript.Fingerprint, msg []byte) error
}

// earlyLabels stores all but the last labelChunk of w's labels ahead of
// the call's transaction, after the session's earlier writes, and says how
// many.
func (c *Call) earlyLabels(w *Write) (int, error) {
	saved := 0
	if len(w.Fps) > labelChunk {
		c.prev()
	}
	for len(w.Fps)-saved > labelChunk {
		from, to := saved, saved+labelChunk
		if err := c.s.Update(func(tx *Tx) error { return tx.PutLabels(w.Session, w.Fps[from:to], w.Labels[from:to]) }); err != nil {
			return saved, err
		}
		saved = to
	}
	return saved, nil
}

// observe reads w.Observe into a copy of the task's record, read through
// the session's earlier writes; same says the call taught it nothing (a
// retried call), and the record is not rewritten.
func (c *Call) observe(w *Write) (rec *Record, same bool, err error) {
	if w.Observe == nil {
		return nil, false, nil
	}
	var r Record
	if w.Record != nil {
		r = *w.Record
	} else if err := c.s.ViewWith(c.before(), func(v *View) (err error) {
		r, _, err = v.Record(w.Session, w.Task)
		return err
	}); err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), observeTimeout)
	defer cancel()
	r.Task = w.Task
	before, _ := json.Marshal(r)
	o := *w.Observe
	o.Context = ctx
	r.Observe(o)
	if after, _ := json.Marshal(r); bytes.Equal(before, after) {
		return nil, true, nil
	}
	r.Updated = w.At
	return &r, false, nil
}

// fill puts into p what the transaction will store of what the session's
// next call reads: the tasks and labels, the frozen messages, the task's
// record, and a compaction's sections in the records as they stand once
// the earlier writes are in.
func (c *Call) fill(p *Pending, before []*Pending, w *Write, saved int, observed *Record, same bool) error {
	if len(w.Sections) > 0 {
		return c.s.ViewWith(before, func(v *View) error {
			for id, section := range w.Sections {
				rec, _, err := v.Record(w.Session, id)
				if err != nil {
					return err
				}
				rec.Task, rec.Summary = id, section
				if err := p.PutRecord(w.Session, rec); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := putTasksLabels(p, w, saved); err != nil {
		return err
	}
	if err := putFrozen(p, w); err != nil {
		return err
	}
	if observed != nil && !same {
		return p.PutRecord(w.Session, *observed)
	}
	return nil
}

func putTasksLabels(to writes, w *Write, saved int) error {
	for _, t := range w.Tasks {
		if err := to.PutTask(w.Session, t); err != nil {
			return err
		}
	}
	if len(w.Fps) != len(w.Labels) {
		return fmt.Errorf("memory: write %s: %d fingerprints but %d labels", w.Session, len(w.Fps), len(w.Labels))
	}
	if len(w.Fps) <= saved {
		return nil
	}
	return to.PutLabels(w.Session, w.Fps[saved:], w.Labels[saved:])
}

func putFrozen(to writes, w *Write) error {
	for _, f := range w.Freeze {
		if err := to.PutFrozen(w.Session, w.Task, f.Fp, f.Msg); err != nil {
			return err
		}
	}
	return nil
}

// storeRecord stores the task's record as observed, or, when the stored
// one changed since (a summary landed), reads the call into that.
func storeRecord(tx *Tx, w *Write, observed *Record, same bool) error {
	if w.Observe == nil || same {
		return nil
	}
	return tx.UpdateRecord(w.Session, w.Task, func(r *Record) error {
		if observed != nil && observed.Version == r.Version {
			*r = *observed
			return nil
		}
		r.Task = w.Task
		r.Observe(*w.Observe)
		r.Updated = w.At
		return nil
	})
}
