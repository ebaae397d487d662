package memory

import (
	"encoding/json"
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
// frozen messages, events). Live data is what the sessions' buckets use
// (bbolt's in-use page bytes): what a compaction would keep. Deleting frees
// pages inside the file for later writes; the file itself never shrinks
// (see Compact).
//
// The sizes are measured in a read transaction, which never blocks
// writers, and each session is deleted in a write transaction of its own,
// so that a sweep holds the store's writer only as long as one session's
// deletion. A session used after it was measured is kept.
func (s *Store) Sweep(now time.Time) (Swept, error) {
	type entry struct {
		id   string
		used time.Time
		size int64
	}
	var es []entry
	err := s.view("sweep", func(tx *bolt.Tx) error {
		data := tx.Bucket(bucketData)
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			// An undecodable session has no time of use: it never
			// expires and is the first evicted for the size bound.
			var sess Session
			_ = json.Unmarshal(v, &sess)
			e := entry{id: string(k), used: sess.Updated, size: int64(len(k) + len(v))}
			if b := data.Bucket(k); b != nil {
				st := b.Stats()
				e.size += int64(st.BranchInuse + st.LeafInuse + st.InlineBucketInuse)
			}
			es = append(es, e)
			return nil
		})
	})
	var out Swept
	if err != nil {
		return out, err
	}
	slices.SortStableFunc(es, func(a, b entry) int { return a.used.Compare(b.used) })
	for _, e := range es {
		out.Live += e.size
	}
	// drop deletes a session unless it was used after it was measured.
	drop := func(e entry) (bool, error) {
		dropped := false
		err := s.db.Update(func(tx *bolt.Tx) error {
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
		if err != nil {
			return false, fmt.Errorf("memory: sweep %s: %w", e.id, err)
		}
		if dropped {
			out.Live -= e.size
		}
		return dropped, nil
	}
	var keep []entry
	for _, e := range es {
		if s.opts.Retain > 0 && !e.used.IsZero() && now.Sub(e.used) > s.opts.Retain {
			ok, err := drop(e)
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
	for i := 0; s.opts.MaxStore > 0 && out.Live > s.opts.MaxStore && i < len(keep); i++ {
		ok, err := drop(keep[i])
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
