package memory

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Bounds of the PostgreSQL backend: no call waits longer for the store.
const (
	pgReadTimeout    = 2 * time.Second
	pgWriteTimeout   = 5 * time.Second
	pgConnectTimeout = 2 * time.Second
	// pgMaxConns is the pool's size unless the URL sets pool_max_conns.
	pgMaxConns = 16
	// pgDownFor is how long operations fail at once after the database
	// could not be reached, before one tries again.
	pgDownFor = time.Second
	// pgLogEvery is how often an outage is logged while it lasts.
	pgLogEvery = 10 * time.Second
)

// feedChannel is the NOTIFY channel of stored events.
const feedChannel = "rcm_events"

// ErrUnavailable means the database could not be reached (PostgreSQL):
// the operation was not done, and the store tries again by itself.
var ErrUnavailable = errors.New("store unavailable")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// pgStore is the shared backend: one PostgreSQL database, any number of
// rcm processes.
type pgStore struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu       sync.Mutex
	downTill time.Time // operations fail at once until then
	logged   time.Time // the outage's last log line
	outages  atomic.Uint64
	// unreleased are claims whose release failed, ended by the next claim.
	unreleased []int64

	followState
	// stop ends follow, which closes followed when it has returned.
	stop, followed chan struct{}
	stopOnce       sync.Once
}

// IsPostgres says whether store names a PostgreSQL database (a
// postgres:// or postgresql:// URL) rather than a bbolt file.
func IsPostgres(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// Redacted is a store's name without a password, for logs and errors.
func Redacted(store string) string {
	u, err := url.Parse(store)
	if err != nil || !IsPostgres(store) {
		if IsPostgres(store) {
			return "postgres://(unparsable)"
		}
		return store
	}
	return u.Redacted()
}

// pgConfig parses dsn (a URL; "" takes everything from the libpq PG*
// variables, which also fill what the URL leaves out) with rcm's bounds.
func pgConfig(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("memory: postgres %s: %w", Redacted(dsn), err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > pgConnectTimeout {
		cfg.ConnConfig.ConnectTimeout = pgConnectTimeout
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// pgxpool's default (4 on a small machine) starves the calls'
		// claims and reads behind the commits under load.
		cfg.MaxConns = pgMaxConns
	}
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "rcm"
	return cfg, nil
}

// OpenPostgres opens the store in the PostgreSQL database dsn
// (postgres://user@host/db; the libpq PG* variables fill what it leaves
// out), bringing its schema up to date first (Migrate). Every rcm that
// opens one database shares its sessions.
func OpenPostgres(dsn string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	cfg, err := pgConfig(dsn)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("memory: postgres %s: %w", Redacted(dsn), err)
	}
	if _, _, err := pgMigrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("memory: postgres %s: %w", Redacted(dsn), err)
	}
	b := &pgStore{pool: pool, log: opts.Log, stop: make(chan struct{}), followed: make(chan struct{})}
	b.replica, b.live = newReplica()
	go b.follow(cfg.ConnConfig)
	// Until the liveness lock is held, this store's claims are only
	// trusted for claimUnwatched: a replica is not ready before it is.
	lctx, lcancel := context.WithTimeout(ctx, 2*pgConnectTimeout)
	defer lcancel()
	if !b.awaitListening(lctx) {
		opts.Log.Warn("store: not yet listening for other replicas' events; claims count for a bounded time meanwhile", "store", Redacted(dsn))
	}
	return start(b, Redacted(dsn), opts), nil
}

func (s *pgStore) close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	select {
	case <-s.followed:
	case <-time.After(pgConnectTimeout + time.Second):
	}
	s.pool.Close()
	return nil
}

// fail returns err, marking the database down for pgDownFor when err says
// it could not be reached (a failed connection, or an answer of the
// server's about its connections; not a statement that ran past its
// bound), so that calls do not each wait for it.
func (s *pgStore) fail(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !strings.HasPrefix(pe.Code, "08") && !strings.HasPrefix(pe.Code, "57") {
		return err
	}
	if errors.Is(err, ErrUnavailable) {
		return err
	}
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		// A call whose client left, or a statement slower than its
		// bound on a busy server: the database answers, and marking it
		// down would fail every other call for pgDownFor.
		return err
	}
	now := time.Now()
	s.mu.Lock()
	if now.After(s.downTill) {
		// The pool's other connections likely went with this one (a
		// restart): new ones, rather than one failure per old one.
		defer s.pool.Reset()
	}
	s.downTill = now.Add(pgDownFor)
	log := now.Sub(s.logged) >= pgLogEvery
	if log {
		s.logged = now
	}
	s.mu.Unlock()
	n := s.outages.Add(1)
	if log {
		s.log.Warn("store unreachable; calls are served without it, retrying", "err", err, "failures", n)
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// check fails at once while the database is marked down.
func (s *pgStore) check() error {
	s.mu.Lock()
	down := time.Now().Before(s.downTill)
	s.mu.Unlock()
	if down {
		return fmt.Errorf("%w: postgres unreachable (retrying)", ErrUnavailable)
	}
	return nil
}

func (s *pgStore) view(fn func(reader) error) error {
	if err := s.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgReadTimeout)
	defer cancel()
	return fn(&pgReader{ctx: ctx, s: s, q: s.pool})
}

// update runs fn in one transaction. A session whose lock another
// transaction holds sends fn back (lockBusy): it runs again with that
// lock taken first. Locks taken first are taken in key order, and any
// other only if free, so replicas never wait for each other in a cycle.
func (s *pgStore) update(fn func(writer) error) error {
	if err := s.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgWriteTimeout)
	defer cancel()
	var first []int64
	for {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return s.fail(err)
		}
		w := &pgWriter{ctx: ctx, s: s, tx: tx, locked: map[int64]bool{}}
		for _, k := range first {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, k); err != nil {
				tx.Rollback(ctx)
				return s.fail(err)
			}
			w.locked[k] = true
		}
		err = fn(w)
		var busy *lockBusy
		if errors.As(err, &busy) {
			tx.Rollback(ctx)
			i, _ := slices.BinarySearch(first, busy.key)
			first = slices.Insert(first, i, busy.key)
			continue
		}
		if err != nil {
			tx.Rollback(ctx)
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return s.fail(err)
		}
		return nil
	}
}

func (s *pgStore) page(limit int, from *Session) ([]Session, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgReadTimeout)
	defer cancel()
	var lim any // NULL: all
	if limit >= 0 {
		lim = limit
	}
	var rows pgx.Rows
	var err error
	if from == nil {
		rows, err = s.pool.Query(ctx, `SELECT id, value FROM rcm_sessions ORDER BY updated_ns DESC, id LIMIT $1`, lim)
	} else {
		rows, err = s.pool.Query(ctx, `SELECT id, value FROM rcm_sessions WHERE (updated_ns, $2::text COLLATE "C") < ($1, id)
ORDER BY updated_ns DESC, id LIMIT $3`, from.Updated.UnixNano(), from.ID, lim)
	}
	if err != nil {
		return nil, s.fail(err)
	}
	var vs []keyed
	for rows.Next() {
		var k keyed
		if err := rows.Scan(&k.key, &k.raw); err != nil {
			rows.Close()
			return nil, s.fail(err)
		}
		vs = append(vs, k)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err)
	}
	return decodeAll[Session](vs, "session")
}

// pgMigrate brings the database's schema to the latest of migrationFiles,
// one replica at a time (an advisory lock held meanwhile), and returns the
// versions before and after. A database of a newer rcm fails with
// ErrSchema.
func pgMigrate(ctx context.Context, pool *pgxpool.Pool) (before, after int, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Release()
	// Keyed by the schema, so that databases' schemas migrate apart.
	const key = `hashtextextended('rcm/migrate/' || current_schema(), 0)`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+key+`)`); err != nil {
		return 0, 0, fmt.Errorf("schema lock: %w", err)
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock(`+key+`)`)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS rcm_schema (version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, 0, fmt.Errorf("schema: %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM rcm_schema`).Scan(&before); err != nil {
		return 0, 0, fmt.Errorf("schema: %w", err)
	}
	files, err := migrationList()
	if err != nil {
		return 0, 0, err
	}
	if before > len(files) {
		return before, before, fmt.Errorf("%w: database has version %d, this rcm knows up to %d (upgrade rcm or use another database)",
			ErrSchema, before, len(files))
	}
	for v := before + 1; v <= len(files); v++ {
		sql, err := migrationFiles.ReadFile(files[v-1])
		if err != nil {
			return before, v - 1, err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO rcm_schema (version) VALUES ($1)`, v)
			return err
		})
		if err != nil {
			return before, v - 1, fmt.Errorf("schema: migrate %d -> %d (%s): %w", v-1, v, files[v-1], err)
		}
	}
	return before, len(files), nil
}

// migrationList is the embedded migrations in version order: file N
// (0001_name.sql counts from 1) takes the schema from N-1 to N.
func migrationList() ([]string, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	for i, n := range names {
		v, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(n, "migrations/"), "_", 2)[0])
		if err != nil || v != i+1 {
			return nil, fmt.Errorf("schema: migration %s out of sequence (want %04d)", n, i+1)
		}
	}
	return names, nil
}

// Migrate brings the schema of the PostgreSQL database dsn up to this
// rcm's (rcm store migrate; OpenPostgres does it too) and returns the
// versions before and after.
func Migrate(dsn string) (before, after int, err error) {
	cfg, err := pgConfig(dsn)
	if err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, 0, fmt.Errorf("memory: migrate %s: %w", Redacted(dsn), err)
	}
	defer pool.Close()
	if before, after, err = pgMigrate(ctx, pool); err != nil {
		return before, after, fmt.Errorf("memory: migrate %s: %w", Redacted(dsn), err)
	}
	return before, after, nil
}

// Check is what CheckPostgres found.
type Check struct {
	Version, Want int   // the database's schema version and this rcm's
	Sessions      int64 // sessions stored
	Claims        int64 // calls under way whose writes are still to commit
}

// CheckPostgres reads the schema version of the database dsn and counts
// what it holds, without changing anything (rcm store check). It fails
// when the schema is not this rcm's.
func CheckPostgres(dsn string) (Check, error) {
	var c Check
	files, err := migrationList()
	if err != nil {
		return c, err
	}
	c.Want = len(files)
	cfg, err := pgConfig(dsn)
	if err != nil {
		return c, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return c, fmt.Errorf("memory: check %s: %w", Redacted(dsn), err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('rcm_schema') IS NOT NULL`).Scan(&exists); err != nil {
		return c, fmt.Errorf("memory: check %s: %w", Redacted(dsn), err)
	}
	if exists {
		if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM rcm_schema`).Scan(&c.Version); err != nil {
			return c, fmt.Errorf("memory: check %s: %w", Redacted(dsn), err)
		}
	}
	if c.Version != c.Want {
		return c, fmt.Errorf("memory: check %s: %w: schema version %d, this rcm's is %d (run rcm store migrate)", Redacted(dsn), ErrSchema, c.Version, c.Want)
	}
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM rcm_sessions), (SELECT count(*) FROM rcm_claims)`).Scan(&c.Sessions, &c.Claims)
	if err != nil {
		return c, fmt.Errorf("memory: check %s: %w", Redacted(dsn), err)
	}
	return c, nil
}

// sweepKey is the advisory lock of the sweep: one replica sweeps at a time.
const sweepKey = `hashtextextended('rcm/sweep/' || current_schema(), 0)`

// sweep measures each session by the bytes of its rows, on one connection
// that holds the sweep's lock (another replica sweeping: nothing to do).
func (s *pgStore) sweep(now time.Time, o Options) (Swept, error) {
	if err := s.check(); err != nil {
		return Swept{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return Swept{}, s.fail(err)
	}
	defer conn.Release()
	var mine bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+sweepKey+`)`).Scan(&mine); err != nil {
		return Swept{}, s.fail(err)
	}
	if !mine {
		return Swept{}, nil
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock(`+sweepKey+`)`)
	// Claims of processes gone (their liveness lock free) and long over.
	if _, err := conn.Exec(ctx, `DELETE FROM rcm_claims WHERE at < now() - interval '10 minutes'`); err != nil {
		return Swept{}, s.fail(err)
	}
	rows, err := conn.Query(ctx, `SELECT s.id, s.value, octet_length(s.id) + octet_length(s.value)
 + coalesce((SELECT sum(octet_length(fp) + octet_length(value)) FROM rcm_labels WHERE session = s.id), 0)
 + coalesce((SELECT sum(octet_length(id) + octet_length(value)) FROM rcm_tasks WHERE session = s.id), 0)
 + coalesce((SELECT sum(octet_length(task) + octet_length(value)) FROM rcm_records WHERE session = s.id), 0)
 + coalesce((SELECT sum(octet_length(task) + octet_length(fp) + octet_length(msg) + 8) FROM rcm_frozen WHERE session = s.id), 0)
 + coalesce((SELECT sum(octet_length(value) + 8) FROM rcm_events WHERE session = s.id), 0)
FROM rcm_sessions s`)
	if err != nil {
		return Swept{}, s.fail(err)
	}
	var es []sweepEntry
	for rows.Next() {
		var e sweepEntry
		var raw []byte
		var size float64
		if err := rows.Scan(&e.id, &raw, &size); err != nil {
			rows.Close()
			return Swept{}, s.fail(err)
		}
		// An undecodable session has no time of use: it never expires
		// and is the first evicted for the size bound.
		var sess Session
		_ = json.Unmarshal(raw, &sess)
		e.used, e.size = sess.Updated, int64(size)
		es = append(es, e)
	}
	if err := rows.Err(); err != nil {
		return Swept{}, s.fail(err)
	}
	return sweepEntries(now, o, es, func(e sweepEntry) (bool, error) {
		dropped := false
		err := s.update(func(wr writer) error {
			dropped = false // a transaction run again starts afresh
			w := wr.(*pgWriter)
			sess, found, err := w.session(e.id)
			if err != nil || !found || sess.Updated.After(e.used) {
				return err
			}
			b := &pgx.Batch{}
			for _, t := range []string{"rcm_labels", "rcm_tasks", "rcm_records", "rcm_frozen", "rcm_events", "rcm_committed", "rcm_claims"} {
				b.Queue(`DELETE FROM `+t+` WHERE session = $1`, e.id)
			}
			b.Queue(`DELETE FROM rcm_sessions WHERE id = $1`, e.id)
			if err := w.tx.SendBatch(w.ctx, b).Close(); err != nil {
				return s.fail(err)
			}
			dropped = true
			return nil
		})
		return dropped, err
	})
}
