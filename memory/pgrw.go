package memory

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/rcm-dev/rcm/transcript"
)

// querier is what reads need of a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pgReader is one read of PostgreSQL. What a call routes on (labels,
// tasks, records, frozen messages and the committed mark) is one
// statement per session, so it is one snapshot, as a bbolt read is.
type pgReader struct {
	ctx   context.Context
	s     *pgStore
	q     querier
	snaps map[string]*pgSnap
}

// pgSnap is a session's rows as one statement read them.
type pgSnap struct {
	labels    map[transcript.Fingerprint][]byte
	tasks     []keyed // by id, bytewise
	records   []keyed // by task, bytewise
	frozen    []pgFrozen
	committed []byte
}

type keyed struct {
	key string
	raw []byte
}

type pgFrozen struct {
	task string
	fp   transcript.Fingerprint
	seq  uint64
	msg  []byte
}

const snapQuery = `SELECT 0, '', fp, 0, value FROM rcm_labels WHERE session = $1
UNION ALL SELECT 1, id, NULL, 0, value FROM rcm_tasks WHERE session = $1
UNION ALL SELECT 2, task, NULL, 0, value FROM rcm_records WHERE session = $1
UNION ALL SELECT 3, task, fp, seq, msg FROM rcm_frozen WHERE session = $1
UNION ALL SELECT 4, '', NULL, 0, id FROM rcm_committed WHERE session = $1 AND nonce = $2`

func (r *pgReader) snap(session string) (*pgSnap, error) {
	if sn, ok := r.snaps[session]; ok {
		return sn, nil
	}
	rows, err := r.q.Query(r.ctx, snapQuery, session, processNonce)
	if err != nil {
		return nil, r.s.fail(err)
	}
	sn := &pgSnap{labels: map[transcript.Fingerprint][]byte{}}
	for rows.Next() {
		var kind int
		var key string
		var fp []byte
		var seq int64
		var val []byte
		if err := rows.Scan(&kind, &key, &fp, &seq, &val); err != nil {
			rows.Close()
			return nil, r.s.fail(err)
		}
		var f transcript.Fingerprint
		if len(fp) == len(f) {
			copy(f[:], fp)
		}
		switch kind {
		case 0:
			sn.labels[f] = val
		case 1:
			sn.tasks = append(sn.tasks, keyed{key, val})
		case 2:
			sn.records = append(sn.records, keyed{key, val})
		case 3:
			sn.frozen = append(sn.frozen, pgFrozen{key, f, uint64(seq), val})
		case 4:
			sn.committed = val
		}
	}
	if err := rows.Err(); err != nil {
		return nil, r.s.fail(err)
	}
	byKey := func(a, b keyed) int { return bytes.Compare([]byte(a.key), []byte(b.key)) }
	slices.SortFunc(sn.tasks, byKey)
	slices.SortFunc(sn.records, byKey)
	if r.snaps == nil {
		r.snaps = map[string]*pgSnap{}
	}
	r.snaps[session] = sn
	return sn, nil
}

func (r *pgReader) session(id string) (Session, bool, error) {
	return pgSession(r.ctx, r.s, r.q, id)
}

func pgSession(ctx context.Context, s *pgStore, q querier, id string) (Session, bool, error) {
	var raw []byte
	err := q.QueryRow(ctx, `SELECT value FROM rcm_sessions WHERE id = $1`, id).Scan(&raw)
	if err == pgx.ErrNoRows {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, s.fail(err)
	}
	var sess Session
	if err := json.Unmarshal(raw, &sess); err != nil {
		return Session{}, false, fmt.Errorf("session %q: corrupt value: %w", id, err)
	}
	return sess, true, nil
}

func (r *pgReader) labels(session string, fps []transcript.Fingerprint) ([]Label, []bool, error) {
	sn, err := r.snap(session)
	if err != nil {
		return nil, nil, err
	}
	return decodeLabels(fps, func(fp transcript.Fingerprint) []byte { return sn.labels[fp] })
}

func (r *pgReader) routed(session string) (map[string]int, error) {
	sn, err := r.snap(session)
	if err != nil {
		return nil, err
	}
	n := map[string]int{}
	names := make(map[string]string, 8)
	for fp, raw := range sn.labels {
		l, err := decodeLabel(raw, names)
		if err != nil {
			return nil, fmt.Errorf("label %x: %w", fp[:], err)
		}
		if l.Routed {
			n[l.Task]++
		}
	}
	return n, nil
}

// decodeAll decodes values in their order; the first undecodable one
// fails, naming its key.
func decodeAll[T any](vs []keyed, what string) ([]T, error) {
	var out []T
	for _, v := range vs {
		var x T
		if err := json.Unmarshal(v.raw, &x); err != nil {
			return nil, fmt.Errorf("%s %q: corrupt value: %w", what, v.key, err)
		}
		out = append(out, x)
	}
	return out, nil
}

func (r *pgReader) tasks(session string) ([]Task, error) {
	sn, err := r.snap(session)
	if err != nil {
		return nil, err
	}
	return decodeAll[Task](sn.tasks, "task")
}

func (r *pgReader) records(session string) ([]Record, error) {
	sn, err := r.snap(session)
	if err != nil {
		return nil, err
	}
	return decodeAll[Record](sn.records, "record")
}

func (r *pgReader) record(session, task string) (Record, bool, error) {
	sn, err := r.snap(session)
	if err != nil {
		return Record{}, false, err
	}
	i, ok := slices.BinarySearchFunc(sn.records, task, func(k keyed, t string) int { return bytes.Compare([]byte(k.key), []byte(t)) })
	if !ok {
		return Record{}, false, nil
	}
	out, err := decodeAll[Record](sn.records[i:i+1], "record")
	if err != nil {
		return Record{}, false, err
	}
	return out[0], true, nil
}

func (r *pgReader) frozen(session string, each func(string, transcript.Fingerprint, uint64, func() ([]byte, bool))) error {
	sn, err := r.snap(session)
	if err != nil {
		return err
	}
	for _, f := range sn.frozen {
		each(f.task, f.fp, f.seq, func() ([]byte, bool) { return bytes.Clone(f.msg), true })
	}
	return nil
}

func (r *pgReader) frozenAt(session, task string, fps []transcript.Fingerprint) ([][]byte, []bool, error) {
	sn, err := r.snap(session)
	if err != nil {
		return nil, nil, err
	}
	msgs, found := make([][]byte, len(fps)), make([]bool, len(fps))
	for _, f := range sn.frozen {
		for i, fp := range fps {
			if f.task == task && f.fp == fp {
				msgs[i], found[i] = bytes.Clone(f.msg), true
			}
		}
	}
	return msgs, found, nil
}

func (r *pgReader) events(session string, limit int) ([]Event, error) {
	var lim any // NULL: no limit
	if limit > 0 {
		lim = limit
	}
	rows, err := r.q.Query(r.ctx, `SELECT seq, value FROM rcm_events WHERE session = $1 ORDER BY seq DESC LIMIT $2`, session, lim)
	if err != nil {
		return nil, r.s.fail(err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var seq int64
		var raw []byte
		if err := rows.Scan(&seq, &raw); err != nil {
			return nil, r.s.fail(err)
		}
		var e Event
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("event %d: corrupt value: %w", seq, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, r.s.fail(err)
	}
	slices.Reverse(out)
	return out, nil
}

func (r *pgReader) committed(session string) ([]byte, error) {
	sn, err := r.snap(session)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(sn.committed), nil
}

// pgWriter is one write transaction. Every session it writes is locked
// first (lock): a session's writes, from any replica, commit one after
// the other.
type pgWriter struct {
	ctx    context.Context
	s      *pgStore
	tx     pgx.Tx
	locked map[int64]bool
}

// lockBusy says that another transaction holds a session's lock: the
// transaction starts again with the lock taken first (see pgStore.update).
type lockBusy struct{ key int64 }

func (e *lockBusy) Error() string { return "session lock busy" }

// sessionKey is a session's advisory lock: a hash, so two sessions may
// share one (they then write one after the other).
func sessionKey(session string) int64 {
	h := fnv.New64a()
	h.Write([]byte("rcm/session/"))
	h.Write([]byte(session))
	return int64(h.Sum64())
}

// lock takes the session's lock if it is free; a busy one ends the
// transaction (lockBusy), which is run again with it taken before any
// other, in key order, so that two replicas never wait for each other.
func (w *pgWriter) lock(session string) error {
	k := sessionKey(session)
	if w.locked[k] {
		return nil
	}
	var ok bool
	if err := w.tx.QueryRow(w.ctx, `SELECT pg_try_advisory_xact_lock($1)`, k).Scan(&ok); err != nil {
		return w.s.fail(err)
	}
	if !ok {
		return &lockBusy{k}
	}
	w.locked[k] = true
	return nil
}

// exec locks session, then runs one statement.
func (w *pgWriter) exec(session, sql string, args ...any) error {
	if err := w.lock(session); err != nil {
		return err
	}
	if _, err := w.tx.Exec(w.ctx, sql, args...); err != nil {
		return w.s.fail(err)
	}
	return nil
}

func (w *pgWriter) session(id string) (Session, bool, error) {
	if err := w.lock(id); err != nil {
		return Session{}, false, err
	}
	return pgSession(w.ctx, w.s, w.tx, id)
}

func (w *pgWriter) putSession(s Session, raw []byte) error {
	return w.exec(s.ID, `INSERT INTO rcm_sessions (id, updated_ns, value) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET updated_ns = excluded.updated_ns, value = excluded.value`, s.ID, s.Updated.UnixNano(), raw)
}

func (w *pgWriter) putLabels(session string, fps []transcript.Fingerprint, vals [][]byte) error {
	// One row per turn: of a turn given twice the later wins, unless the
	// earlier is routed (as puts one after the other leave it).
	keys := make([][]byte, 0, len(fps))
	vs := make([][]byte, 0, len(fps))
	routed := make([]bool, 0, len(fps))
	for i, fp := range fps {
		if n := len(keys); n > 0 && bytes.Equal(keys[n-1], fp[:]) {
			if !routed[n-1] {
				vs[n-1], routed[n-1] = vals[i], labelRouted(vals[i])
			}
			continue
		}
		keys = append(keys, fp[:])
		vs = append(vs, vals[i])
		routed = append(routed, labelRouted(vals[i]))
	}
	return w.exec(session, `INSERT INTO rcm_labels (session, fp, routed, value)
SELECT $1, * FROM unnest($2::bytea[], $3::boolean[], $4::bytea[])
ON CONFLICT (session, fp) DO UPDATE SET routed = excluded.routed, value = excluded.value WHERE NOT rcm_labels.routed`,
		session, keys, routed, vs)
}

func (w *pgWriter) putTask(session, id string, raw []byte) error {
	return w.exec(session, `INSERT INTO rcm_tasks (session, id, value) VALUES ($1, $2, $3)
ON CONFLICT (session, id) DO UPDATE SET value = excluded.value`, session, id, raw)
}

func (w *pgWriter) record(session, task string) (Record, bool, error) {
	if err := w.lock(session); err != nil {
		return Record{}, false, err
	}
	var raw []byte
	err := w.tx.QueryRow(w.ctx, `SELECT value FROM rcm_records WHERE session = $1 AND task = $2`, session, task).Scan(&raw)
	if err == pgx.ErrNoRows {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, w.s.fail(err)
	}
	out, err := decodeAll[Record]([]keyed{{task, raw}}, "record")
	if err != nil {
		return Record{}, false, err
	}
	return out[0], true, nil
}

func (w *pgWriter) putRecord(session, task string, raw []byte) error {
	return w.exec(session, `INSERT INTO rcm_records (session, task, value) VALUES ($1, $2, $3)
ON CONFLICT (session, task) DO UPDATE SET value = excluded.value`, session, task, raw)
}

func (w *pgWriter) putFrozen(session, task string, fp transcript.Fingerprint, msg []byte) error {
	if err := w.lock(session); err != nil {
		return err
	}
	tag, err := w.tx.Exec(w.ctx, `INSERT INTO rcm_frozen (session, task, fp, seq, msg) VALUES ($1, $2, $3, nextval('rcm_frozen_seq'), $4)
ON CONFLICT DO NOTHING`, session, task, fp[:], msg)
	if err != nil {
		return w.s.fail(err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	return w.exec(session, `DELETE FROM rcm_frozen WHERE session = $1 AND task = $2 AND seq <
(SELECT seq FROM rcm_frozen WHERE session = $1 AND task = $2 ORDER BY seq DESC OFFSET $3 LIMIT 1)`, session, task, maxFrozen-1)
}

func (w *pgWriter) appendEvent(session string, max uint64, encode func(uint64) ([]byte, error)) error {
	if err := w.lock(session); err != nil {
		return err
	}
	var last int64
	if err := w.tx.QueryRow(w.ctx, `SELECT coalesce(max(seq), 0) FROM rcm_events WHERE session = $1`, session).Scan(&last); err != nil {
		return w.s.fail(err)
	}
	seq := uint64(last) + 1
	raw, err := encode(seq)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO rcm_events (session, seq, value) VALUES ($1, $2, $3)`, session, int64(seq), raw)
	if seq > max {
		b.Queue(`DELETE FROM rcm_events WHERE session = $1 AND seq < $2`, session, int64(seq-max+1))
	}
	// Delivered at commit: the other replicas' inspector feeds read the
	// event (follow).
	b.Queue(`SELECT pg_notify('`+feedChannel+`', $1)`, hex.EncodeToString(w.s.replica)+" "+strconv.FormatUint(seq, 10)+" "+session)
	if err := w.tx.SendBatch(w.ctx, b).Close(); err != nil {
		return w.s.fail(err)
	}
	return nil
}

func (w *pgWriter) commits(session string, id []byte) error {
	return w.exec(session, `INSERT INTO rcm_committed (session, nonce, id) VALUES ($1, $2, $3)
ON CONFLICT (session, nonce) DO UPDATE SET id = excluded.id`, session, processNonce, id)
}
