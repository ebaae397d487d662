package memory

import (
	"fmt"
	"time"
)

// Record is a task's state record M_z: what a model returning to the task
// needs to know, kept outside the history so that routing cannot lose it.
type Record struct {
	Task string `json:"task"`
	// Requirements are the task's requests, verbatim and in order; an
	// amendment is appended (Amends set), never merged into what it amends.
	Requirements []Requirement `json:"requirements,omitempty"`
	Workspace    string        `json:"workspace,omitempty"` // the checkout the task works in
	FilesRead    []string      `json:"files_read,omitempty"`
	FilesChanged []string      `json:"files_changed,omitempty"`
	Commands     []Command     `json:"commands,omitempty"`
	LastTest     *TestRun      `json:"last_test,omitempty"`
	Progress     []string      `json:"progress,omitempty"`
	Unfinished   []string      `json:"unfinished,omitempty"`
	Summary      string        `json:"summary,omitempty"` // optional model summary
	// Observed is Observe's bookkeeping; Render ignores it.
	Observed Cursor `json:"observed"`
	// Version counts the writes of this record; the store sets it.
	Version int       `json:"version"`
	Updated time.Time `json:"updated"`

	// Omitted counts the requirements cut from the middle of a long list
	// (see maxRequirements); they stood after the first keepFirst ones.
	Omitted int `json:"requirements_omitted,omitempty"`
}

// Cursor tells Observe what the last turn it read added, so that reading
// that turn again (the next call of the same turn, or the same call twice)
// replaces those additions instead of repeating them.
type Cursor struct {
	Turn     string `json:"turn,omitempty"`     // hex fingerprint of the turn read last
	Commands int    `json:"commands,omitempty"` // trailing Commands it added
	Closing  bool   `json:"closing,omitempty"`  // whether the last Progress item is its closing text
	// Done is how many leading Progress items come from the latest todo
	// list (its completed items); the closing texts of turns follow them.
	Done int `json:"done,omitempty"`
}

// Requirement is one request of a task.
type Requirement struct {
	Text   string `json:"text"`
	Turn   string `json:"turn"` // hex transcript.Fingerprint of the turn that made it
	Amends bool   `json:"amends,omitempty"`
}

// Command is a shell command the task ran; Exit is nil while unknown.
type Command struct {
	Cmd  string `json:"cmd"`
	Exit *int   `json:"exit,omitempty"`
}

// TestRun is the last test command of a task and its outcome (e.g.
// "passed", "failed: 2 of 31", as the extractor words it).
type TestRun struct {
	Command
	Outcome string `json:"outcome,omitempty"`
}

// Record returns the record of task in session and whether it exists.
func (s *Store) Record(session, task string) (r Record, found bool, err error) {
	err = s.view("record "+session+"/"+task, func(rd reader) error {
		r, found, err = rd.record(session, task)
		return err
	})
	return r, found, err
}

// Records returns every record of session, ordered by task id.
func (s *Store) Records(session string) (out []Record, err error) {
	err = s.view("records "+session, func(r reader) error {
		out, err = r.records(session)
		return err
	})
	return out, err
}

// UpdateRecord reads the record of task (the zero Record with Task set when
// there is none), lets fn change it and stores the result, all in one
// transaction, so that concurrent updates of one record do not lose each
// other's changes. An error from fn aborts the update. fn may run more
// than once (see Queue) and must only modify its argument.
func (s *Store) UpdateRecord(session, task string, fn func(*Record) error) error {
	return s.Update(func(w *Tx) error { return w.UpdateRecord(session, task, fn) })
}

// UpdateRecord is Store.UpdateRecord within the transaction w.
func (w *Tx) UpdateRecord(session, task string, fn func(*Record) error) error {
	if err := checkID("session", session); err != nil {
		return fmt.Errorf("memory: update record: %w", err)
	}
	if err := checkID("task", task); err != nil {
		return fmt.Errorf("memory: update record: %w", err)
	}
	return w.do("update record "+session+"/"+task, func() error {
		r, _, err := w.w.record(session, task)
		if err != nil {
			return err
		}
		r.Task = task
		version := r.Version
		if err := fn(&r); err != nil {
			return err
		}
		r.Task, r.Version = task, version+1
		raw, err := encodeJSON("record", []byte(task), r)
		if err != nil {
			return err
		}
		return w.w.putRecord(session, task, raw)
	})
}
