package memory

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/rcm-dev/rcm/transcript"
)

// View is one read transaction: what a model call routes on, read at one
// point in time and at the cost of one transaction (Store.View). Its
// methods read as Store's do; like every read here, what they return is
// copied out of the transaction.
type View struct{ tx *bolt.Tx }

// View runs fn in one read transaction.
func (s *Store) View(fn func(*View) error) error {
	return s.view("read", func(tx *bolt.Tx) error { return fn(&View{tx}) })
}

// Labels is Store.Labels within the view.
func (v *View) Labels(session string, fps []transcript.Fingerprint) ([]Label, []bool, error) {
	return readLabels(v.tx, session, fps)
}

// Tasks is Store.Tasks within the view.
func (v *View) Tasks(session string) ([]Task, error) {
	out, err := readJSON[Task](sessionBucket(v.tx, session, bucketTasks), "task")
	if err != nil {
		return nil, err
	}
	sortTasks(out)
	return out, nil
}

// Records is Store.Records within the view.
func (v *View) Records(session string) ([]Record, error) {
	return readJSON[Record](sessionBucket(v.tx, session, bucketRecords), "record")
}

// Frozen holds memory messages frozen for turns, by task and turn.
type Frozen map[string]map[transcript.Fingerprint][]byte

// At is Store.FrozenAt of the turns fps of task, from f.
func (f Frozen) At(task string, fps []transcript.Fingerprint) (msgs [][]byte, found []bool) {
	msgs, found = make([][]byte, len(fps)), make([]bool, len(fps))
	for i, fp := range fps {
		msgs[i], found[i] = f[task][fp]
	}
	return msgs, found
}

// Frozen returns the messages frozen for any of the turns fps, whatever
// their task: a call reads them before it knows its task. It reads every
// key of the session's frozen messages (each task keeps at most maxFrozen)
// and copies only those of fps.
func (v *View) Frozen(session string, fps []transcript.Fingerprint) (Frozen, error) {
	b := sessionBucket(v.tx, session, bucketFrozen)
	if b == nil || len(fps) == 0 {
		return nil, nil
	}
	want := make(map[transcript.Fingerprint]bool, len(fps))
	for _, fp := range fps {
		want[fp] = true
	}
	out := Frozen{}
	c := b.Cursor()
	for k, val := c.First(); k != nil; k, val = c.Next() {
		// frozenKey: the task's length, the task, the fingerprint.
		n, w := binary.Uvarint(k)
		var fp transcript.Fingerprint
		if w <= 0 || uint64(len(k)-w) != n+uint64(len(fp)) {
			continue
		}
		copy(fp[:], k[w+int(n):])
		if !want[fp] {
			continue
		}
		if msg, ok := frozenValue(val); ok {
			task := string(k[w : w+int(n)])
			if out[task] == nil {
				out[task] = map[transcript.Fingerprint][]byte{}
			}
			out[task][fp] = msg
		}
	}
	return out, nil
}
