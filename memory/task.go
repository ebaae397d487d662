package memory

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Task is one of a session's tasks, as the router named it.
type Task struct {
	ID      string    `json:"id"`
	Name    string    `json:"name,omitempty"`
	Created time.Time `json:"created"`
	Turns   int       `json:"turns"` // turns labelled with this task
}

// PutTask creates or replaces task t of session.
func (s *Store) PutTask(session string, t Task) error {
	return s.Update(func(w *Tx) error { return w.PutTask(session, t) })
}

// PutTask is Store.PutTask within the transaction w.
func (w *Tx) PutTask(session string, t Task) error {
	if err := checkID("session", session); err != nil {
		return fmt.Errorf("memory: put task: %w", err)
	}
	if err := checkID("task", t.ID); err != nil {
		return fmt.Errorf("memory: put task: %w", err)
	}
	return w.do("put task "+session+"/"+t.ID, func(tx *bolt.Tx) error {
		b, err := createSessionBucket(tx, session, bucketTasks)
		if err != nil {
			return err
		}
		return putJSON(b, "task", []byte(t.ID), t)
	})
}

// Tasks lists the tasks of session, oldest first (ties by id).
func (s *Store) Tasks(session string) ([]Task, error) {
	out, err := listJSON[Task](s, "tasks "+session, "task", func(tx *bolt.Tx) *bolt.Bucket {
		return sessionBucket(tx, session, bucketTasks)
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Task) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}
