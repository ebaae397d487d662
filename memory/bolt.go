package memory

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcm-dev/rcm/transcript"
)

// boltStore is the embedded backend: one bbolt file, held by one process.
type boltStore struct {
	db *bolt.DB
}

func (b *boltStore) view(fn func(reader) error) error {
	return b.db.View(func(tx *bolt.Tx) error { return fn(boltReader{tx}) })
}

func (b *boltStore) update(fn func(writer) error) error {
	return b.db.Update(func(tx *bolt.Tx) error { return fn(boltWriter{boltReader{tx}}) })
}

func (b *boltStore) close() error { return b.db.Close() }

// page reads every session's entry: bbolt keeps them by id, not by use.
func (b *boltStore) page(limit int, from *Session) ([]Session, error) {
	var all []Session
	err := b.db.View(func(tx *bolt.Tx) (err error) {
		all, err = readJSON[Session](tx.Bucket(bucketSessions), "session")
		return err
	})
	if err != nil {
		return nil, err
	}
	if from != nil {
		all = slices.DeleteFunc(all, func(v Session) bool { return sessionOrder(*from, v) >= 0 })
	}
	slices.SortFunc(all, sessionOrder)
	if limit >= 0 && len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}

// boltReader reads one bbolt transaction.
type boltReader struct{ tx *bolt.Tx }

// sessionBucket returns the named bucket of a session's data, or nil when
// it does not exist yet.
func (r boltReader) sessionBucket(session string, name []byte) *bolt.Bucket {
	sb := r.tx.Bucket(bucketData).Bucket([]byte(session))
	if sb == nil {
		return nil
	}
	return sb.Bucket(name)
}

func (r boltReader) session(id string) (Session, bool, error) {
	var sess Session
	found, err := getJSON(r.tx.Bucket(bucketSessions), "session", []byte(id), &sess)
	return sess, found, err
}

func (r boltReader) labels(session string, fps []transcript.Fingerprint) ([]Label, []bool, error) {
	b := r.sessionBucket(session, bucketLabels)
	if b == nil {
		return make([]Label, len(fps)), make([]bool, len(fps)), nil
	}
	// One cursor for all lookups: Bucket.Get allocates a cursor each.
	c := b.Cursor()
	return decodeLabels(fps, func(fp transcript.Fingerprint) []byte {
		if k, raw := c.Seek(fp[:]); bytes.Equal(k, fp[:]) {
			return raw
		}
		return nil
	})
}

func (r boltReader) routed(session string) (map[string]int, error) {
	n := map[string]int{}
	b := r.sessionBucket(session, bucketLabels)
	if b == nil {
		return n, nil
	}
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
	return n, err
}

func (r boltReader) tasks(session string) ([]Task, error) {
	return readJSON[Task](r.sessionBucket(session, bucketTasks), "task")
}

func (r boltReader) records(session string) ([]Record, error) {
	return readJSON[Record](r.sessionBucket(session, bucketRecords), "record")
}

func (r boltReader) record(session, task string) (Record, bool, error) {
	var rec Record
	found, err := getJSON(r.sessionBucket(session, bucketRecords), "record", []byte(task), &rec)
	return rec, found, err
}

func (r boltReader) frozen(session string, each func(string, transcript.Fingerprint, uint64, func() ([]byte, bool))) error {
	b := r.sessionBucket(session, bucketFrozen)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	for k, val := c.First(); k != nil; k, val = c.Next() {
		// frozenKey: the task's length, the task, the fingerprint.
		n, w := binary.Uvarint(k)
		var fp transcript.Fingerprint
		if w <= 0 || uint64(len(k)-w) != n+uint64(len(fp)) {
			continue
		}
		copy(fp[:], k[w+int(n):])
		var seq uint64 // too short to hold one: the oldest
		if len(val) >= 8 {
			seq = binary.BigEndian.Uint64(val)
		}
		each(string(k[w:w+int(n)]), fp, seq, func() ([]byte, bool) { return frozenValue(val) })
	}
	return nil
}

func (r boltReader) frozenAt(session, task string, fps []transcript.Fingerprint) ([][]byte, []bool, error) {
	msgs, found := make([][]byte, len(fps)), make([]bool, len(fps))
	b := r.sessionBucket(session, bucketFrozen)
	if b == nil {
		return msgs, found, nil
	}
	for i, fp := range fps {
		msgs[i], found[i] = frozenValue(b.Get(frozenKey(task, fp)))
	}
	return msgs, found, nil
}

// frozenValue is the message of a stored frozen value (after its sequence
// number), copied: v is valid only inside the transaction.
func frozenValue(v []byte) ([]byte, bool) {
	if len(v) < 8 {
		return nil, false
	}
	return bytes.Clone(v[8:]), true
}

func (r boltReader) events(session string, limit int) ([]Event, error) {
	var out []Event
	b := r.sessionBucket(session, bucketEvents)
	if b == nil {
		return nil, nil
	}
	c := b.Cursor()
	for k, raw := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, raw = c.Prev() {
		var e Event
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("event %x: corrupt value: %w", k, err)
		}
		out = append(out, e)
	}
	slices.Reverse(out)
	return out, nil
}

// committed: one process holds the file, so one key serves.
func (r boltReader) committed(session string) ([]byte, error) {
	if sb := r.tx.Bucket(bucketData).Bucket([]byte(session)); sb != nil {
		return bytes.Clone(sb.Get(keyCommitted)), nil
	}
	return nil, nil
}

// boltWriter writes one bbolt transaction.
type boltWriter struct{ boltReader }

// createSessionBucket is sessionBucket for writes: it creates what is
// missing.
func (w boltWriter) createSessionBucket(session string, name []byte) (*bolt.Bucket, error) {
	sb, err := w.tx.Bucket(bucketData).CreateBucketIfNotExists([]byte(session))
	if err != nil {
		return nil, err
	}
	return sb.CreateBucketIfNotExists(name)
}

func (w boltWriter) putSession(s Session, raw []byte) error {
	return w.tx.Bucket(bucketSessions).Put([]byte(s.ID), raw)
}

func (w boltWriter) putLabels(session string, fps []transcript.Fingerprint, vals [][]byte) error {
	b, err := w.createSessionBucket(session, bucketLabels)
	if err != nil {
		return err
	}
	for i, fp := range fps {
		if old := b.Get(fp[:]); old != nil && labelRouted(old) {
			continue
		}
		if err := b.Put(fp[:], vals[i]); err != nil {
			return fmt.Errorf("label %s: %w", fp, err)
		}
	}
	return nil
}

func (w boltWriter) putTask(session, id string, raw []byte) error {
	b, err := w.createSessionBucket(session, bucketTasks)
	if err != nil {
		return err
	}
	return b.Put([]byte(id), raw)
}

func (w boltWriter) putRecord(session, task string, raw []byte) error {
	b, err := w.createSessionBucket(session, bucketRecords)
	if err != nil {
		return err
	}
	return b.Put([]byte(task), raw)
}

func (w boltWriter) putFrozen(session, task string, fp transcript.Fingerprint, msg []byte) error {
	b, err := w.createSessionBucket(session, bucketFrozen)
	if err != nil {
		return err
	}
	key := frozenKey(task, fp)
	if b.Get(key) != nil {
		return nil
	}
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(msg)), seq)
	if err := b.Put(key, append(v, msg...)); err != nil {
		return err
	}
	return pruneFrozen(b, key[:len(key)-len(fp)])
}

// pruneFrozen deletes all but the maxFrozen newest entries under prefix.
func pruneFrozen(b *bolt.Bucket, prefix []byte) error {
	type entry struct {
		key []byte
		seq uint64
	}
	var es []entry
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != len(prefix)+len(transcript.Fingerprint{}) {
			continue
		}
		var seq uint64 // an entry too short to hold one is the oldest
		if len(v) >= 8 {
			seq = binary.BigEndian.Uint64(v)
		}
		es = append(es, entry{bytes.Clone(k), seq})
	}
	for len(es) > maxFrozen {
		oldest := 0
		for i, e := range es {
			if e.seq < es[oldest].seq {
				oldest = i
			}
		}
		if err := b.Delete(es[oldest].key); err != nil {
			return err
		}
		es = append(es[:oldest], es[oldest+1:]...)
	}
	return nil
}

func (w boltWriter) appendEvent(session string, max uint64, encode func(uint64) ([]byte, error)) error {
	b, err := w.createSessionBucket(session, bucketEvents)
	if err != nil {
		return err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	raw, err := encode(seq)
	if err != nil {
		return err
	}
	if err := b.Put(binary.BigEndian.AppendUint64(nil, seq), raw); err != nil {
		return err
	}
	// Keys are sequence numbers deleted only from the front, so the log
	// holds the keys first..seq: drop those below seq-max+1.
	if seq <= max {
		return nil
	}
	keep := seq - max + 1
	c := b.Cursor()
	// A key that is not a sequence number (bad data) stops the trim.
	for k, _ := c.First(); len(k) == 8 && binary.BigEndian.Uint64(k) < keep; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

func (w boltWriter) commits(session string, id []byte) error {
	sb, err := w.tx.Bucket(bucketData).CreateBucketIfNotExists([]byte(session))
	if err != nil {
		return err
	}
	return sb.Put(keyCommitted, id)
}

// sweep measures sizes in a read transaction, which never blocks writers,
// and deletes each session in a write transaction of its own, so that a
// sweep holds the store's writer only as long as one session's deletion.
// Live data is what the sessions' buckets use (bbolt's in-use page bytes):
// what a compaction would keep.
func (b *boltStore) sweep(now time.Time, o Options) (Swept, error) {
	var es []sweepEntry
	err := b.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucketData)
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			// An undecodable session has no time of use: it never
			// expires and is the first evicted for the size bound.
			var sess Session
			_ = json.Unmarshal(v, &sess)
			e := sweepEntry{id: string(k), used: sess.Updated, size: int64(len(k) + len(v))}
			if b := data.Bucket(k); b != nil {
				st := b.Stats()
				e.size += int64(st.BranchInuse + st.LeafInuse + st.InlineBucketInuse)
			}
			es = append(es, e)
			return nil
		})
	})
	if err != nil {
		return Swept{}, fmt.Errorf("memory: sweep: %w", err)
	}
	return sweepEntries(now, o, es, func(e sweepEntry) (bool, error) {
		dropped := false
		err := b.db.Update(func(tx *bolt.Tx) error {
			sessions := tx.Bucket(bucketSessions)
			var sess Session
			v := sessions.Get([]byte(e.id))
			if v == nil {
				return nil
			}
			if json.Unmarshal(v, &sess) == nil && sess.Updated.After(e.used) {
				return nil
			}
			if err := tx.Bucket(bucketData).DeleteBucket([]byte(e.id)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
				return err
			}
			dropped = true
			return sessions.Delete([]byte(e.id))
		})
		return dropped, err
	})
}
