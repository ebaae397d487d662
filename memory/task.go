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
	// Turns counts the turns routed to this task. The stored value is 0:
	// the count comes from the labels, at read time (CountTurns).
	Turns int `json:"turns"`
}

// PutTask creates or replaces task t of session.
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
	sortTasks(out)
	return out, nil
}

func sortTasks(ts []Task) {
	slices.SortFunc(ts, func(a, b Task) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

func countTurns(tx *bolt.Tx, session string, tasks []Task) error {
	n := map[string]int{}
	if b := sessionBucket(tx, session, bucketLabels); b != nil {
		names := make(map[string]string, 8)
		err := b.ForEach(func(k, raw []byte) error {
			l, err := decodeLabel(raw, names)
			if err != nil {
				return fmt.Errorf("label %x: %w", k, err)
			}
			if l.Routed {
				n[l.Task]++
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for i := range tasks {
		tasks[i].Turns = n[tasks[i].ID]
	}
	return nil
}
