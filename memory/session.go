package memory

import (
	"fmt"
	"time"
)

// Session is one harness conversation as the proxy sees it.
type Session struct {
	ID      string    `json:"id"`
	Parent  string    `json:"parent,omitempty"` // parent session of a subagent
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	Calls   int       `json:"calls"` // model calls seen
}

// Touch records a call of session id at now: it creates the session on its
// first call and otherwise counts the call and moves Updated forward. A
// parent id, once known, is kept.
func (w *Tx) Touch(id, parent string, now time.Time) error {
	if err := checkID("session", id); err != nil {
		return fmt.Errorf("memory: touch: %w", err)
	}
	return w.do("touch "+id, func() error {
		sess, found, err := w.w.session(id)
		if err != nil {
			return err
		}
		if !found {
			sess = Session{ID: id, Created: now, Updated: now}
		}
		if sess.Parent == "" {
			sess.Parent = parent
		}
		if now.After(sess.Updated) {
			sess.Updated = now
		}
		sess.Calls++
		raw, err := encodeJSON("session", []byte(id), sess)
		if err != nil {
			return err
		}
		return w.w.putSession(sess, raw)
	})
}

// Session returns the session id and whether it exists.
func (s *Store) Session(id string) (sess Session, found bool, err error) {
	err = s.view("session "+id, func(r reader) error {
		sess, found, err = r.session(id)
		return err
	})
	return sess, found, err
}

// Sessions lists every session, most recently updated first (ties by id).
func (s *Store) Sessions() ([]Session, error) {
	out, err := s.b.page(-1, nil)
	if err != nil {
		return nil, fmt.Errorf("memory: sessions: %w", err)
	}
	return out, nil
}
