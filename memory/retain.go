package memory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DefaultSweepEvery is how often the sweeper runs when Options.SweepEvery
// is 0; it also runs once right after Open.
const DefaultSweepEvery = 10 * time.Minute

// Swept tells what one Sweep deleted.
type Swept struct {
	Expired int   // sessions unused for longer than Options.Retain
	Evicted int   // oldest sessions deleted to bring the store under Options.MaxStore
	Live    int64 // bytes of live data after the sweep (see Sweep)
}

// Sweep deletes the sessions last used before now minus Options.Retain,
// then, while the live data exceeds Options.MaxStore, the least recently
// used sessions, each with everything keyed by it (labels, tasks, records,
// frozen messages, events). Each backend measures live data its own way
// (bbolt: the pages the sessions' buckets use; PostgreSQL: the bytes of
// their rows). Deleting frees room for later writes; a bbolt file itself
// never shrinks (see Compact).
//
// Each session is deleted in a transaction of its own, so that a sweep
// holds a session's writes only as long as its deletion, and a session
// used after it was measured is kept.
func (s *Store) Sweep(now time.Time) (Swept, error) {
	return s.b.sweep(now, s.opts)
}

// sweepEntry is a session as a sweep measured it.
type sweepEntry struct {
	id   string
	used time.Time
	size int64
}

// sweepEntries deletes, through drop, the entries of es that Retain
// expires and then, least recently used first, those over MaxStore. drop
// reports whether it deleted the session (false: used since).
func sweepEntries(now time.Time, o Options, es []sweepEntry, drop func(sweepEntry) (bool, error)) (Swept, error) {
	var out Swept
	slices.SortStableFunc(es, func(a, b sweepEntry) int { return a.used.Compare(b.used) })
	for _, e := range es {
		out.Live += e.size
	}
	del := func(e sweepEntry) (bool, error) {
		ok, err := drop(e)
		if err != nil {
			return false, fmt.Errorf("memory: sweep %s: %w", e.id, err)
		}
		if ok {
			out.Live -= e.size
		}
		return ok, nil
	}
	var keep []sweepEntry
	for _, e := range es {
		if o.Retain > 0 && !e.used.IsZero() && now.Sub(e.used) > o.Retain {
			ok, err := del(e)
			if err != nil {
				return out, err
			}
			if ok {
				out.Expired++
			}
			continue
		}
		keep = append(keep, e)
	}
	for i := 0; o.MaxStore > 0 && out.Live > o.MaxStore && i < len(keep); i++ {
		ok, err := del(keep[i])
		if err != nil {
			return out, err
		}
		if ok {
			out.Evicted++
		}
	}
	return out, nil
}

// sweeper runs Sweep every Options.SweepEvery until stop closes.
func (s *Store) sweeper(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(s.opts.SweepEvery)
	defer t.Stop()
	for {
		res, err := s.Sweep(time.Now())
		switch {
		case err != nil:
			s.opts.Log.Warn("store sweep failed", "err", err)
		case res.Expired+res.Evicted > 0:
			s.opts.Log.Info("store swept", "expired", res.Expired, "evicted", res.Evicted, "live_bytes", res.Live)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// Compact copies the store at path into a new file with bbolt's Compact,
// dropping the free pages that deletions left, and renames it over path,
// so that the file shrinks to its live data. It opens path with the same
// lock as a running rcm, so it fails with ErrLocked while a proxy uses the
// file; the rename is atomic, so a crash leaves either file whole. It
// returns the sizes before and after.
func Compact(path string, opts Options) (before, after int64, err error) {
	opts = opts.withDefaults()
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("memory: compact: %w", err)
	}
	// The exclusive lock, as rcm serve takes it: no proxy writes meanwhile.
	src, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout})
	if errors.Is(err, bolt.ErrTimeout) {
		return 0, 0, fmt.Errorf("memory: compact %s: %w (waited %v)", path, ErrLocked, opts.Timeout)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("memory: compact %s: %w", path, err)
	}
	defer src.Close()
	tmp := path + ".compact"
	os.Remove(tmp) // left by an earlier, interrupted compaction
	dst, err := bolt.Open(tmp, st.Mode().Perm(), &bolt.Options{Timeout: opts.Timeout})
	if err != nil {
		return 0, 0, fmt.Errorf("memory: compact %s: %w", path, err)
	}
	fail := func(err error) (int64, int64, error) {
		dst.Close()
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("memory: compact %s: %w", path, err)
	}
	// 64 MiB per transaction bounds the copy's memory.
	if err := bolt.Compact(dst, src, 64<<20); err != nil {
		return fail(err)
	}
	if err := dst.Sync(); err != nil {
		return fail(err)
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("memory: compact %s: %w", path, err)
	}
	nst, err := os.Stat(tmp)
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("memory: compact %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync() // make the rename itself durable
		d.Close()
	}
	return st.Size(), nst.Size(), nil
}
