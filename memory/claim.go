package memory

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Claim is a call under way whose writes are still to commit, as the
// other replicas sharing the store see it (PostgreSQL only; the zero Claim
// on bbolt, where one process holds the store and orders its own writes).
type Claim struct{ id int64 }

// claimPoll is how often a call waiting for another replica's writes
// looks again.
const claimPoll = 5 * time.Millisecond

// Claim registers a call of session whose writes will follow it (Release
// them in its write transaction, or Release it when it writes nothing),
// then waits until the calls of the session that other replicas claimed
// before it have written, at most until bound or ctx ends. It returns
// the claim, how long it waited and why it stopped: "" (nothing to wait
// for), "replica" (those calls wrote), "bound", "cancelled", or "error"
// (the store could not say; the call goes on). A claim of a process that
// is gone (its liveness lock released) is not waited for.
func (s *Store) Claim(ctx context.Context, session string, bound time.Duration) (Claim, time.Duration, string) {
	p, ok := s.b.(*pgStore)
	if !ok {
		return Claim{}, 0, ""
	}
	start := time.Now()
	id, older, err := p.claim(ctx, session)
	if err != nil {
		return Claim{}, time.Since(start), "error"
	}
	if !older {
		return Claim{id}, time.Since(start), ""
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	tick := time.NewTicker(claimPoll)
	defer tick.Stop()
	for {
		select {
		case <-t.C:
			return Claim{id}, time.Since(start), "bound"
		case <-ctx.Done():
			return Claim{id}, time.Since(start), "cancelled"
		case <-tick.C:
		}
		older, err := p.older(ctx, session, id)
		if err != nil {
			return Claim{id}, time.Since(start), "error"
		}
		if !older {
			return Claim{id}, time.Since(start), "replica"
		}
	}
}

// Release ends c in this transaction: the call's writes are in it.
func (w *Tx) Release(c Claim) error {
	pw, ok := w.w.(*pgWriter)
	if !ok || c.id == 0 {
		return nil
	}
	if _, err := pw.tx.Exec(pw.ctx, `DELETE FROM rcm_claims WHERE id = $1`, c.id); err != nil {
		return fmt.Errorf("memory: release claim: %w", pw.s.fail(err))
	}
	return nil
}

// Release ends c for a call that writes nothing.
func (s *Store) Release(c Claim) {
	p, ok := s.b.(*pgStore)
	if !ok || c.id == 0 {
		return
	}
	err := p.check()
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), pgWriteTimeout)
		defer cancel()
		if _, err = p.pool.Exec(ctx, `DELETE FROM rcm_claims WHERE id = $1`, c.id); err != nil {
			p.fail(err)
		}
	}
	if err != nil {
		// The next claim ends it: left open, it would hold the
		// session's calls on other replicas for their bound.
		p.mu.Lock()
		p.unreleased = append(p.unreleased, c.id)
		p.mu.Unlock()
	}
}

// newReplica returns a store's name among the replicas and its liveness
// lock, which follow holds while the store is open: claims whose owner's
// lock is free are over. Each store has its own (tests open several in
// one process).
func newReplica() ([]byte, int64) {
	id := binary.BigEndian.AppendUint64(nil, rand.Uint64())
	h := fnv.New64a()
	h.Write([]byte("rcm/live/"))
	h.Write(id)
	return id, int64(h.Sum64())
}

// olderClaims is whether the session ($1) has claims before the one id
// names of other processes ($2 their nonce) that still live: whose
// liveness lock is held (pg_locks shows a bigint key as two oids), or,
// for a claim made while its process held none (pid 0: its listening
// connection was down), that are younger than claimUnwatched.
func olderClaims(id string) string {
	return `SELECT EXISTS (SELECT 1 FROM rcm_claims c WHERE c.session = $1 AND c.id < ` + id + ` AND c.nonce <> $2
AND c.at > now() - interval '10 minutes'
AND (c.pid = 0 AND c.at > now() - interval '` + strconv.Itoa(int(claimUnwatched/time.Second)) + ` seconds'
	OR EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.pid = c.pid
	AND l.classid = ((c.live >> 32) & 4294967295)::oid AND l.objid = (c.live & 4294967295)::oid)))`
}

// claimUnwatched is how long a claim made without a liveness lock makes
// others wait for it: nothing says when its process dies, so it counts
// for about as long as a call's answer and write take on a working
// replica (its waiters still wait at most their own bound each), and not
// for the 10 minutes after which any claim is over.
const claimUnwatched = 30 * time.Second

// claim inserts the call's claim and reads whether older ones of other
// replicas are open, in one round trip. The claim commits without waiting
// for the disk: it only makes others wait, and a crash ends it anyway.
func (p *pgStore) claim(ctx context.Context, session string) (int64, bool, error) {
	if err := p.check(); err != nil {
		return 0, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, pgReadTimeout)
	defer cancel()
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL synchronous_commit TO OFF`)
	p.mu.Lock()
	left := slices.Clone(p.unreleased)
	p.mu.Unlock()
	if len(left) > 0 {
		b.Queue(`DELETE FROM rcm_claims WHERE id = ANY($1)`, left)
	}
	var id int64
	var older bool
	b.Queue(`INSERT INTO rcm_claims (session, nonce, live, pid) VALUES ($1, $2, $3, $4) RETURNING id`, session, p.replica, p.live, p.pid.Load()).
		QueryRow(func(r pgx.Row) error { return r.Scan(&id) })
	b.Queue(olderClaims("currval('rcm_claims_id_seq')"), session, p.replica).
		QueryRow(func(r pgx.Row) error { return r.Scan(&older) })
	b.Queue(`COMMIT`)
	if err := p.pool.SendBatch(ctx, b).Close(); err != nil {
		return 0, false, p.fail(err)
	}
	if len(left) > 0 {
		// Another claim may have ended some of them too.
		p.mu.Lock()
		p.unreleased = slices.DeleteFunc(p.unreleased, func(id int64) bool { return slices.Contains(left, id) })
		p.mu.Unlock()
	}
	return id, older, nil
}

func (p *pgStore) older(ctx context.Context, session string, id int64) (bool, error) {
	if err := p.check(); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, pgReadTimeout)
	defer cancel()
	var older bool
	if err := p.pool.QueryRow(ctx, olderClaims(strconv.FormatInt(id, 10)), session, p.replica).Scan(&older); err != nil {
		return false, p.fail(err)
	}
	return older, nil
}

// Follow calls fn with every event that another process sharing the
// store commits (PostgreSQL: LISTEN/NOTIFY), so that an inspector on any
// replica follows the calls of all. Only the last fn given counts; on
// bbolt it is never called.
func (s *Store) Follow(fn func(session string, e Event)) {
	if p, ok := s.b.(*pgStore); ok {
		p.onEvent.Store(&fn)
	}
}

// follow holds the process's liveness lock and listens for events on one
// connection of its own, reconnecting (every pgDownFor) until stop.
func (p *pgStore) follow(cfg *pgx.ConnConfig) {
	defer close(p.followed)
	for {
		// Its failures are the store's, which the calls meet and report.
		p.listen(cfg)
		select {
		case <-p.stop:
			return
		case <-time.After(pgDownFor):
		}
	}
}

func (p *pgStore) listen(cfg *pgx.ConnConfig) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, p.live); err != nil {
		return err
	}
	p.pid.Store(int32(conn.PgConn().PID()))
	defer p.pid.Store(0)
	if _, err := conn.Exec(ctx, `LISTEN `+feedChannel); err != nil {
		return err
	}
	p.listening.Store(true)
	defer p.listening.Store(false)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		nonce, rest, _ := strings.Cut(n.Payload, " ")
		seq, session, _ := strings.Cut(rest, " ")
		fn := p.onEvent.Load()
		if fn == nil || nonce == hex.EncodeToString(p.replica) {
			continue
		}
		e, ok := p.event(session, seq)
		if ok {
			(*fn)(session, e)
		}
	}
}

// event reads one event of session, false when it is gone or unreadable.
func (p *pgStore) event(session, seq string) (Event, bool) {
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil {
		return Event{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgReadTimeout)
	defer cancel()
	var raw []byte
	if err := p.pool.QueryRow(ctx, `SELECT value FROM rcm_events WHERE session = $1 AND seq = $2`, session, n).Scan(&raw); err != nil {
		return Event{}, false
	}
	var e Event
	return e, json.Unmarshal(raw, &e) == nil
}

// followState is what follow shares with the store.
type followState struct {
	// replica names the store among those sharing the database; live is
	// its liveness lock.
	replica   []byte
	live      int64
	pid       atomic.Int32 // the backend holding live (0: none now)
	onEvent   atomic.Pointer[func(string, Event)]
	listening atomic.Bool // the liveness lock is held and events come
}

// Ping says whether the store answers now, within ctx (the readiness
// check of a replica); a bbolt store, held open by this process, always
// does.
func (s *Store) Ping(ctx context.Context) error {
	p, ok := s.b.(*pgStore)
	if !ok {
		return nil
	}
	if err := p.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, pgReadTimeout)
	defer cancel()
	if err := p.pool.Ping(ctx); err != nil {
		return p.fail(err)
	}
	return nil
}

// Outages counts the operations that found the store unreachable since
// it opened (PostgreSQL; 0 on bbolt).
func (s *Store) Outages() uint64 {
	if p, ok := s.b.(*pgStore); ok {
		return p.outages.Load()
	}
	return 0
}

// awaitListening waits, until ctx ends, for follow to hold the liveness
// lock, and says whether it does.
func (p *pgStore) awaitListening(ctx context.Context) bool {
	tick := time.NewTicker(claimPoll)
	defer tick.Stop()
	for !p.listening.Load() {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}
