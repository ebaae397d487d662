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
// (see Compact). A session written while it is swept is created anew by
// that write.
func (s *Store) Sweep(now time.Time) (Swept, error) {
	var out Swept
	err := s.db.Update(func(tx *bolt.Tx) error {
		type entry struct {
			id   []byte
			used time.Time
			size int64
		}
		sessions, data := tx.Bucket(bucketSessions), tx.Bucket(bucketData)
		var es []entry
		err := sessions.ForEach(func(k, v []byte) error {
			// An undecodable session has no time of use: it never
			// expires and is the first evicted for the size bound.
			var sess Session
			_ = json.Unmarshal(v, &sess)
			e := entry{id: k, used: sess.Updated}
			if b := data.Bucket(k); b != nil {
				st := b.Stats()
				e.size = int64(st.BranchInuse + st.LeafInuse + st.InlineBucketInuse)
			}
			e.size += int64(len(k) + len(v))
			es = append(es, e)
			return nil
		})
		if err != nil {
			return err
		}
		slices.SortStableFunc(es, func(a, b entry) int { return a.used.Compare(b.used) })
		var live int64
		for _, e := range es {
			live += e.size
		}
		drop := func(e entry) error {
			if err := data.DeleteBucket(e.id); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
				return err
			}
			live -= e.size
			return sessions.Delete(e.id)
		}
		var keep []entry
		for _, e := range es {
			// The keys were read while ranging: copy them before the
			// deletes change the pages they point into.
			if s.opts.Retain > 0 && !e.used.IsZero() && now.Sub(e.used) > s.opts.Retain {
				if err := drop(entry{id: clone(e.id), size: e.size}); err != nil {
					return err
				}
				out.Expired++
				continue
			}
			keep = append(keep, e)
		}
		for i := 0; s.opts.MaxStore > 0 && live > s.opts.MaxStore && i < len(keep); i++ {
			if err := drop(entry{id: clone(keep[i].id), size: keep[i].size}); err != nil {
				return err
			}
			out.Evicted++
		}
		out.Live = live
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("memory: sweep: %w", err)
	}
	return out, nil
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

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
