package memory

import (
	"time"

	"github.com/rcm-dev/rcm/transcript"
)

// backend is where a Store keeps its data: a bbolt file that one process
// holds (boltStore), or a PostgreSQL database that any number of rcm
// replicas share (pgStore). What both share lives in Store, View and Tx:
// the commit order (Queue), reads through Pending writes, checks,
// encodings and redaction. A backend stores the encoded values and hands
// them back; it applies only the rules that need its own transaction (a
// routed label stays, a turn's first frozen message stays, each task keeps
// maxFrozen of them, each session MaxEvents events).
type backend interface {
	// view runs fn on one consistent read of what has committed.
	view(fn func(reader) error) error
	// update runs fn in one write transaction and commits it. fn may run
	// more than once (a backend may retry a transaction whole).
	update(fn func(writer) error) error
	// page lists up to limit sessions (all when limit < 0) in
	// sessionOrder, after from when it is not nil.
	page(limit int, from *Session) ([]Session, error)
	// sweep is Store.Sweep.
	sweep(now time.Time, o Options) (Swept, error)
	close() error
}

// reader is one read of a backend. Every value it returns is a copy.
type reader interface {
	session(id string) (Session, bool, error)
	labels(session string, fps []transcript.Fingerprint) ([]Label, []bool, error)
	// routed counts the session's routed labels by task.
	routed(session string) (map[string]int, error)
	tasks(session string) ([]Task, error)
	records(session string) ([]Record, error) // ordered by task id
	record(session, task string) (Record, bool, error)
	// frozen calls each for every frozen message of the session; msg
	// copies the message out (false: a value that holds none).
	frozen(session string, each func(task string, fp transcript.Fingerprint, seq uint64, msg func() ([]byte, bool))) error
	frozenAt(session, task string, fps []transcript.Fingerprint) ([][]byte, []bool, error)
	events(session string, limit int) ([]Event, error)
	// committed is the id of the latest Pending of this process that a
	// committed transaction made for session (nil: none).
	committed(session string) ([]byte, error)
}

// writer is one write transaction of a backend. The values it is given
// are encoded (and redacted) already.
type writer interface {
	session(id string) (Session, bool, error)
	putSession(s Session, raw []byte) error
	// putLabels stores vals[i] under fps[i], given in key order, keeping
	// a routed label where one is stored.
	putLabels(session string, fps []transcript.Fingerprint, vals [][]byte) error
	putTask(session, id string, raw []byte) error
	record(session, task string) (Record, bool, error)
	putRecord(session, task string, raw []byte) error
	// putFrozen stores msg for the turn fp of task unless the turn has
	// one, then keeps the task's maxFrozen latest.
	putFrozen(session, task string, fp transcript.Fingerprint, msg []byte) error
	// appendEvent numbers the session's next event, stores what encode
	// makes of that number and keeps the latest max events.
	appendEvent(session string, max uint64, encode func(seq uint64) ([]byte, error)) error
	commits(session string, id []byte) error
}
