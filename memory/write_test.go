package memory

import (
	"time"

	"github.com/rcm-dev/rcm/transcript"
)

// The proxy writes within one transaction per call (Tx) and reads frozen
// messages for several turns at once; the tests write and read one thing
// at a time through these.

func (s *Store) touch(id, parent string, now time.Time) error {
	return s.Update(func(w *Tx) error { return w.Touch(id, parent, now) })
}

func (s *Store) appendEvent(session string, e Event) error {
	return s.Update(func(w *Tx) error { return w.AppendEvent(session, &e) })
}

func (s *Store) putLabels(session string, fps []transcript.Fingerprint, labels []Label) error {
	return s.Update(func(w *Tx) error { return w.PutLabels(session, fps, labels) })
}

func (s *Store) putFrozen(session, task string, fp transcript.Fingerprint, msg []byte) error {
	return s.Update(func(w *Tx) error { return w.PutFrozen(session, task, fp, msg) })
}

func (s *Store) putTask(session string, t Task) error {
	return s.Update(func(w *Tx) error { return w.PutTask(session, t) })
}

// putRecord stores r as the record of r.Task in session, replacing what was
// there; its Version becomes the stored one's plus one.
func (s *Store) putRecord(session string, r Record) error {
	return s.UpdateRecord(session, r.Task, func(old *Record) error {
		r.Version = old.Version
		*old = r
		return nil
	})
}

// frozen is FrozenAt for one turn.
func (s *Store) frozen(session, task string, fp transcript.Fingerprint) ([]byte, bool, error) {
	msgs, found, err := s.FrozenAt(session, task, []transcript.Fingerprint{fp})
	return msgs[0], found[0], err
}
