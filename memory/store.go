package memory

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// schemaVersion is the layout version this package reads and writes.
const schemaVersion = 1

var (
	// ErrLocked means another process (another rcm) holds the store's file.
	ErrLocked = errors.New("another rcm process holds the store (stop it or choose another --db)")
	// ErrSchema means the file was written by a newer rcm with a layout this
	// one does not understand.
	ErrSchema = errors.New("unsupported store schema version")
)

// Bucket names.
var (
	bucketMeta     = []byte("meta")
	bucketSessions = []byte("sessions")
	bucketData     = []byte("data")
	keySchema      = []byte("schema")

	bucketLabels  = []byte("labels")
	bucketTasks   = []byte("tasks")
	bucketRecords = []byte("records")
	bucketEvents  = []byte("events")
)

// Options configures a Store. The zero value is ready to use.
type Options struct {
	// Timeout bounds the wait for the file lock held by another process;
	// 0 means 1s. After it Open fails with ErrLocked.
	Timeout time.Duration
	// MaxEvents is how many events each session keeps (the oldest are
	// deleted first); 0 means 1000.
	MaxEvents int
	// Retain is how long a session is kept after its last use; older ones
	// are deleted by the sweeper. 0 keeps sessions forever.
	Retain time.Duration
	// MaxStore bounds the store's live data in bytes: above it the
	// sweeper deletes the least recently used sessions. 0: no bound.
	MaxStore int64
	// SweepEvery is the sweeper's interval (it runs only with Retain or
	// MaxStore set); 0 means DefaultSweepEvery.
	SweepEvery time.Duration
	// Log receives the sweeper's reports; nil discards them.
	Log *slog.Logger
}

// Validate reports options that cannot be used.
func (o Options) Validate() error {
	if o.Timeout < 0 {
		return fmt.Errorf("memory: options: negative Timeout %v", o.Timeout)
	}
	if o.MaxEvents < 0 {
		return fmt.Errorf("memory: options: negative MaxEvents %d", o.MaxEvents)
	}
	if o.Retain < 0 || o.MaxStore < 0 || o.SweepEvery < 0 {
		return fmt.Errorf("memory: options: negative Retain, MaxStore or SweepEvery (%v, %d, %v)", o.Retain, o.MaxStore, o.SweepEvery)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Timeout == 0 {
		o.Timeout = time.Second
	}
	if o.MaxEvents == 0 {
		o.MaxEvents = 1000
	}
	if o.SweepEvery == 0 {
		o.SweepEvery = DefaultSweepEvery
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Store is rcm's store, on one of its backends (bbolt: Open; PostgreSQL:
// OpenPostgres). Its methods are safe for concurrent use.
type Store struct {
	b backend
	// path names the store in errors: the file, or the database's URL
	// without its password.
	path string
	opts Options
	// stop ends the sweeper, which closes swept when it has returned;
	// both nil without one. stopOnce lets Close run twice.
	stop, swept chan struct{}
	stopOnce    sync.Once
	commits     commits
	reads       atomic.Int64 // ReadTxs
	// order is each session's write queue in this process (Begin).
	order order
}

// DefaultPath is the store's file under the user's data directory:
// $XDG_DATA_HOME/rcm/rcm.db, else ~/Library/Application Support/rcm/rcm.db
// on macOS and ~/.local/share/rcm/rcm.db elsewhere.
func DefaultPath() (string, error) {
	if dir := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "rcm", "rcm.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("memory: default path: %w", err)
	}
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Application Support", "rcm", "rcm.db"), nil
	}
	return filepath.Join(home, ".local", "share", "rcm", "rcm.db"), nil
}

// Open opens the store at path, creating its directory (0700) and the file
// (0600) when missing, and initialises or migrates its schema. It fails with
// ErrLocked when another process holds the file and with ErrSchema when the
// file comes from a newer rcm.
func Open(path string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("memory: open %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("memory: open %s: %w (waited %v)", path, ErrLocked, opts.Timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("memory: open %s: %w", path, err)
	}
	if err := db.Update(migrate); err != nil {
		db.Close()
		return nil, fmt.Errorf("memory: open %s: %w", path, err)
	}
	return start(&boltStore{db}, path, opts), nil
}

// start returns the Store on b, with its sweeper running when opts ask
// for one.
func start(b backend, path string, opts Options) *Store {
	s := &Store{b: b, path: path, opts: opts, commits: commits{window: commitWindow, max: maxGroup}}
	if opts.Retain > 0 || opts.MaxStore > 0 {
		s.stop, s.swept = make(chan struct{}), make(chan struct{})
		go s.sweeper(s.stop, s.swept)
	}
	return s
}

// Close stops the sweeper and releases the file and its lock (the
// database's connections).
func (s *Store) Close() error {
	s.stopOnce.Do(func() {
		if s.stop != nil {
			close(s.stop)
			<-s.swept
		}
	})
	if err := s.b.close(); err != nil {
		return fmt.Errorf("memory: close %s: %w", s.path, err)
	}
	return nil
}

// migrations[v] upgrades a file from schema version v to v+1.
var migrations = []func(*bolt.Tx) error{
	0: func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketSessions, bucketData} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	},
}

// migrate brings the file to schemaVersion. A new file has no meta bucket
// and counts as version 0.
func migrate(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	var version uint64
	if v := meta.Get(keySchema); v != nil {
		if len(v) != 8 {
			return fmt.Errorf("schema: version value has %d bytes, want 8", len(v))
		}
		version = binary.BigEndian.Uint64(v)
	}
	if version > schemaVersion {
		return fmt.Errorf("%w: file has version %d, this rcm knows up to %d (upgrade rcm or use another --db)",
			ErrSchema, version, schemaVersion)
	}
	for ; version < schemaVersion; version++ {
		if err := migrations[version](tx); err != nil {
			return fmt.Errorf("schema: migrate %d -> %d: %w", version, version+1, err)
		}
	}
	return meta.Put(keySchema, binary.BigEndian.AppendUint64(nil, schemaVersion))
}

// maxIDLen bounds session and task ids (bbolt keys may be up to 32 KiB;
// anything near that is not an id).
const maxIDLen = 1024

func checkID(what, id string) error {
	if id == "" {
		return fmt.Errorf("empty %s id", what)
	}
	if len(id) > maxIDLen {
		return fmt.Errorf("%s id of %d bytes exceeds %d", what, len(id), maxIDLen)
	}
	return nil
}

// ReadTxs returns how many reads (one consistent snapshot each, a
// transaction on bbolt) the store has made since it opened: what a call
// costs the store in reads, which the proxy's tests hold to one a call.
func (s *Store) ReadTxs() int { return int(s.reads.Load()) }

// view runs a read, wrapping its error with the operation.
func (s *Store) view(op string, fn func(reader) error) error {
	s.reads.Add(1)
	if err := s.b.view(fn); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	return nil
}

// Tx is a write transaction in which several updates land together: all
// that one model call teaches rcm costs one commit (one fsync) instead of
// one per update.
type Tx struct {
	s *Store
	w writer
}

// do runs fn, wrapping its error with the operation.
func (w *Tx) do(op string, fn func() error) error {
	if err := fn(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	return nil
}
