package memory

import (
	"cmp"
	"fmt"
	"slices"
	"time"
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
	return w.do("put task "+session+"/"+t.ID, func() error {
		raw, err := encodeJSON("task", []byte(t.ID), t)
		if err != nil {
			return err
		}
		return w.w.putTask(session, t.ID, raw)
	})
}

// Tasks lists the tasks of session, oldest first (ties by id).
func (s *Store) Tasks(session string) ([]Task, error) {
	var out []Task
	err := s.view("tasks "+session, func(r reader) (err error) {
		out, err = r.tasks(session)
		return err
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
