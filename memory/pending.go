package memory

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"github.com/rcm-dev/rcm/redact"
	"github.com/rcm-dev/rcm/transcript"
)

// Pending is what a write transaction of one session will have stored once
// it commits, for reads that cannot wait for its fsync (ViewWith). It takes
// the same puts as Tx and keeps each value as the store would return it:
// labels through their binary codec, JSON values and frozen messages
// redacted. A read through it returns what the same read would return after
// the commit, whether or not the commit has happened meanwhile: the rules
// of the store apply at read time (a routed label and the first frozen
// message of a turn stay, each task keeps maxFrozen frozen messages).
//
// The transaction that makes the writes says so (Tx.Commits): once it has
// committed, a view reads the store alone, so a Pending may be read before,
// during and after its commit alike. Several Pendings of a session, made
// one after the other and committed in that order, read as their
// transactions leave the store one after the other.
//
// A Pending is filled by one goroutine and read only after it is handed
// over (it is not safe for concurrent writes).
type Pending struct {
	session string
	// id is the process's nonce, then the Pending's number: no Pending of
	// an earlier process shares it, and a later one of this process has a
	// greater number.
	id      [16]byte
	labels  map[transcript.Fingerprint]Label
	tasks   map[string]Task
	records map[string]Record
	// frozen holds each task's puts in order.
	frozen map[string][]frozenPut
	// task is the task of the event the writes append ("": none, or a
	// call that names none).
	task string
}

type frozenPut struct {
	fp  transcript.Fingerprint
	msg []byte
}

// NewPending returns an empty Pending of session's writes, to commit after
// every earlier one of the session.
func NewPending(session string) *Pending {
	p := &Pending{session: session}
	copy(p.id[:8], processNonce[:])
	binary.BigEndian.PutUint64(p.id[8:], pendings.Add(1))
	return p
}

var (
	processNonce = binary.BigEndian.AppendUint64(nil, rand.Uint64())
	pendings     atomic.Uint64
)

// keyCommitted, in a session's data bucket, is the id of the latest
// Pending a committed transaction made.
var keyCommitted = []byte("committed")

// Commits says that this transaction makes p's writes (puts them itself):
// once it commits, views read the store, not p.
func (w *Tx) Commits(p *Pending) error {
	if err := checkID("session", p.session); err != nil {
		return fmt.Errorf("memory: commit pending: %w", err)
	}
	return w.do("commit pending "+p.session, func() error { return w.w.commits(p.session, p.id[:]) })
}

// pending returns the writes of session v reads ahead of the store, in
// order: v's Pendings of the session that have not committed. Commits go in
// order, so those are the ones numbered after the latest committed one of
// this process (all of them when that one is an earlier process's).
func (v *View) pending(session string) ([]*Pending, error) {
	if len(v.ps) == 0 || v.ps[0].session != session {
		return nil, nil
	}
	if !v.checked {
		c, err := v.r.committed(session)
		if err != nil {
			return nil, err
		}
		v.checked = true
		if len(c) == len(Pending{}.id) && bytes.Equal(c[:8], processNonce) {
			n := binary.BigEndian.Uint64(c[8:])
			v.ps = slices.DeleteFunc(slices.Clone(v.ps), func(p *Pending) bool { return binary.BigEndian.Uint64(p.id[8:]) <= n })
		}
	}
	return v.ps, nil
}

// PutLabels is Tx.PutLabels, ahead of the commit.
func (p *Pending) PutLabels(session string, fps []transcript.Fingerprint, labels []Label) error {
	if err := p.check("put labels", session); err != nil {
		return err
	}
	if len(fps) != len(labels) {
		return fmt.Errorf("memory: put labels %s: %d fingerprints but %d labels", session, len(fps), len(labels))
	}
	if p.labels == nil {
		p.labels = make(map[transcript.Fingerprint]Label, len(fps))
	}
	names := map[string]string{}
	for i, l := range labels {
		raw, err := encodeLabel(l)
		if err != nil {
			return fmt.Errorf("memory: put labels %s: label %s: %w", session, fps[i], err)
		}
		if old, ok := p.labels[fps[i]]; ok && old.Routed {
			continue // as PutLabels keeps a routed label
		}
		if p.labels[fps[i]], err = decodeLabel(raw, names); err != nil {
			return fmt.Errorf("memory: put labels %s: label %s: %w", session, fps[i], err)
		}
	}
	return nil
}

// PutEventTask notes the task of the event the transaction appends (see
// View.LastTask).
func (p *Pending) PutEventTask(task string) { p.task = task }

// PutTask is Tx.PutTask, ahead of the commit.
func (p *Pending) PutTask(session string, t Task) error {
	if err := p.check("put task", session); err != nil {
		return err
	}
	if err := checkID("task", t.ID); err != nil {
		return fmt.Errorf("memory: put task: %w", err)
	}
	stored, err := stored("task", t.ID, t)
	if err != nil {
		return err
	}
	if p.tasks == nil {
		p.tasks = map[string]Task{}
	}
	p.tasks[t.ID] = stored
	return nil
}

// PutRecord is Tx.UpdateRecord, ahead of the commit, of an update that
// leaves r: r is the record as read before the update, then changed.
func (p *Pending) PutRecord(session string, r Record) error {
	if err := p.check("put record", session); err != nil {
		return err
	}
	if err := checkID("task", r.Task); err != nil {
		return fmt.Errorf("memory: put record: %w", err)
	}
	r.Version++
	stored, err := stored("record", r.Task, r)
	if err != nil {
		return err
	}
	if p.records == nil {
		p.records = map[string]Record{}
	}
	p.records[r.Task] = stored
	return nil
}

// PutFrozen is Tx.PutFrozen, ahead of the commit.
func (p *Pending) PutFrozen(session, task string, fp transcript.Fingerprint, msg []byte) error {
	if err := p.check("put frozen", session); err != nil {
		return err
	}
	if err := checkID("task", task); err != nil {
		return fmt.Errorf("memory: put frozen: %w", err)
	}
	// Every put is kept, in order: whether a turn's first message stays
	// depends on what the store holds at read time (see Frozen.put).
	if p.frozen == nil {
		p.frozen = map[string][]frozenPut{}
	}
	p.frozen[task] = append(p.frozen[task], frozenPut{fp, redact.Bytes(msg)})
	return nil
}

func (p *Pending) check(op, session string) error {
	if err := checkID("session", session); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	if session != p.session {
		return fmt.Errorf("memory: %s: session %q in writes of %q", op, session, p.session)
	}
	return nil
}

// stored returns v as the store returns it once put (encoded, redacted,
// decoded).
func stored[T any](what, key string, v T) (T, error) {
	raw, err := encodeJSON(what, []byte(key), v)
	if err != nil {
		return v, fmt.Errorf("memory: %w", err)
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		return v, fmt.Errorf("memory: %s %q: decode: %w", what, key, err)
	}
	return out, nil
}
