package memory

import (
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
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
	return w.do("touch "+id, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		var sess Session
		found, err := getJSON(b, "session", []byte(id), &sess)
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
		return putJSON(b, "session", []byte(id), sess)
	})
}

// Session returns the session id and whether it exists.
func (s *Store) Session(id string) (sess Session, found bool, err error) {
	err = s.view("session "+id, func(tx *bolt.Tx) error {
		sess, found, err = readSession(tx, id)
		return err
	})
	return sess, found, err
}

func readSession(tx *bolt.Tx, id string) (Session, bool, error) {
	var sess Session
	found, err := getJSON(tx.Bucket(bucketSessions), "session", []byte(id), &sess)
	return sess, found, err
}

// Sessions lists every session, most recently updated first.
func (s *Store) Sessions() ([]Session, error) {
	out, err := listJSON[Session](s, "sessions", "session", func(tx *bolt.Tx) *bolt.Bucket {
		return tx.Bucket(bucketSessions)
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b Session) int { return b.Updated.Compare(a.Updated) })
	return out, nil
}
