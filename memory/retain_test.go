package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/transcript"
)

// fillSession writes a session last used at used, with a record of about
// size bytes, labels, a frozen message and events.
func fillSession(t *testing.T, s *Store, id string, used time.Time, size int) {
	t.Helper()
	err := s.Update(func(w *Tx) error {
		if err := w.Touch(id, "", used); err != nil {
			return err
		}
		if err := w.PutLabels(id, []transcript.Fingerprint{{1}}, []Label{{Task: "t1", Confidence: 1, Method: "lexical"}}); err != nil {
			return err
		}
		if err := w.PutTask(id, Task{ID: "t1", Created: used}); err != nil {
			return err
		}
		if err := w.PutFrozen(id, "t1", transcript.Fingerprint{1}, []byte(`{"role":"user","content":"x"}`)); err != nil {
			return err
		}
		if err := w.AppendEvent(id, &Event{At: used, Kind: "agent", Task: "t1"}); err != nil {
			return err
		}
		return w.UpdateRecord(id, "t1", func(r *Record) error {
			r.Requirements = []Requirement{{Text: strings.Repeat("requirement text of "+id+". ", size/24), Turn: "01"}}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// gone reports whether nothing of session id is left.
func gone(t *testing.T, s *Store, id string) bool {
	t.Helper()
	_, found, err := s.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := s.Records(id)
	evs, _ := s.Events(id, 0)
	tasks, _ := s.Tasks(id)
	_, frozen, _ := s.frozen(id, "t1", transcript.Fingerprint{1})
	return !found && len(recs) == 0 && len(evs) == 0 && len(tasks) == 0 && !frozen
}

func TestSweepRetain(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		fillSession(t, s, "old", now.Add(-31*24*time.Hour), 100)
		fillSession(t, s, "recent", now.Add(-29*24*time.Hour), 100)
		s.opts.Retain = 30 * 24 * time.Hour
		res, err := s.Sweep(now)
		if err != nil {
			t.Fatal(err)
		}
		if res.Expired != 1 || res.Evicted != 0 {
			t.Errorf("swept %+v, want 1 expired", res)
		}
		if !gone(t, s, "old") {
			t.Error("expired session left data behind")
		}
		if gone(t, s, "recent") {
			t.Error("recent session deleted")
		}
		// Sweeping again finds nothing more.
		if res, err := s.Sweep(now); err != nil || res.Expired+res.Evicted != 0 {
			t.Errorf("second sweep %+v %v", res, err)
		}
	})
}

func TestSweepMaxStore(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		var ids []string
		for i := range 10 {
			id := fmt.Sprintf("s%02d", i)
			ids = append(ids, id)
			// Last use is not creation order: s00 is used last.
			used := now.Add(-time.Duration(10-i) * time.Minute)
			if i == 0 {
				used = now
			}
			fillSession(t, s, id, used, 20<<10)
		}
		full, err := s.Sweep(now)
		if err != nil || full.Expired+full.Evicted != 0 {
			t.Fatalf("unbounded sweep %+v %v", full, err)
		}
		s.opts.MaxStore = full.Live * 4 / 10
		res, err := s.Sweep(now)
		if err != nil {
			t.Fatal(err)
		}
		if res.Live > s.opts.MaxStore || res.Evicted < 6 || res.Evicted > 7 {
			t.Fatalf("swept %+v for a bound of %d of %d bytes", res, s.opts.MaxStore, full.Live)
		}
		// The least recently used went first.
		for i, id := range ids {
			evicted := i >= 1 && i <= res.Evicted
			if gone(t, s, id) != evicted {
				t.Errorf("session %s (used %d-th last): gone=%v, want %v", id, i, !evicted, evicted)
			}
		}
	})
}

func TestSweeperRunsInBackground(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rcm.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fillSession(t, s, "old", time.Now().Add(-2*time.Hour), 100)
	fillSession(t, s, "new", time.Now(), 100)
	s.Close()
	s, err = Open(path, Options{Retain: time.Hour, SweepEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !gone(t, s, "old") {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper did not delete the expired session at start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if gone(t, s, "new") {
		t.Error("sweeper deleted a session in use")
	}
}

func TestCompact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rcm.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range 40 {
		fillSession(t, s, fmt.Sprintf("s%02d", i), now.Add(time.Duration(i)*time.Second), 32<<10)
	}
	// Compaction refuses while a process (here: this one) holds the store.
	if _, _, err := Compact(path, Options{Timeout: 50 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("compact of a store in use: %v, want ErrLocked", err)
	}
	s.opts.MaxStore = 1 // keep nothing but the last session
	if _, err := s.Sweep(now); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before, after, err := Compact(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if after != st.Size() || after*4 > before {
		t.Fatalf("compacted %d -> %d bytes (file %d)", before, after, st.Size())
	}
	if _, err := os.Stat(path + ".compact"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ss, err := s.Sessions(); err != nil || len(ss) != 0 {
		t.Errorf("after compaction: %d sessions, %v", len(ss), err)
	}
	fillSession(t, s, "again", now, 100)
	if _, _, err := Compact(filepath.Join(t.TempDir(), "missing.db"), Options{}); err == nil {
		t.Error("compacting a missing file succeeded (and created it?)")
	}
}

func TestRequirementsCapped(t *testing.T) {
	var ms []chat.Message
	var want []string
	const n = 30
	for i := range n {
		req := fmt.Sprintf("request %d: change module %d", i, i)
		want = append(want, req)
		ms = append(ms, chattest.User(req), chattest.Assistant(fmt.Sprintf("done %d", i)))
	}
	var r Record
	// Call by call, as a session grows.
	for k := 1; k <= n; k++ {
		tr := chattest.Parse(t, chattest.Body(ms[:2*k-1]...))
		r.Observe(Observation{Transcript: tr, Turns: allTurns(tr), Response: completion(t, ms[2*k-1]), Status: 200})
	}
	wantKept := slices.Concat(want[:keepFirst], want[n-(maxRequirements-keepFirst):])
	if got := reqTexts(r); !slices.Equal(got, wantKept) || r.Omitted != n-maxRequirements {
		t.Fatalf("requirements %q (omitted %d), want %q (omitted %d)", got, r.Omitted, wantKept, n-maxRequirements)
	}
	// Reading the whole session again adds nothing: the cut ones stay cut.
	tr := chattest.Parse(t, chattest.Body(ms[:2*n-1]...))
	again := r
	again.Requirements = slices.Clone(r.Requirements)
	again.Observe(Observation{Transcript: tr, Turns: allTurns(tr), Response: completion(t, ms[2*n-1]), Status: 200})
	if !slices.Equal(reqTexts(again), wantKept) || again.Omitted != r.Omitted {
		t.Fatalf("observing again: %q (omitted %d)", reqTexts(again), again.Omitted)
	}
	text := Render(r, 0)
	note := fmt.Sprintf("… %d requirements omitted by rcm …", n-maxRequirements)
	if i, j, k := strings.Index(text, want[keepFirst-1]), strings.Index(text, note), strings.Index(text, want[n-(maxRequirements-keepFirst)]); i < 0 || j < i || k < j {
		t.Fatalf("render does not say the cut between the kept requirements:\n%s", text)
	}
}

// TestObserveStopsWhenDone: a done context stops the reading of turns, and
// a later call reads the turns left, ending where one full reading ends.
func TestObserveStopsWhenDone(t *testing.T) {
	tr, err := transcript.Parse(transcript.OpenAIChat, hugeBody(4000), transcript.Hints{})
	if err != nil {
		t.Fatal(err)
	}
	var full Record
	full.Observe(Observation{Transcript: tr, Turns: allTurns(tr), Status: 200})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var r Record
	r.Observe(Observation{Transcript: tr, Turns: allTurns(tr), Status: 200, Context: ctx})
	if r.Omitted >= full.Omitted {
		t.Fatalf("a done context read %d requirements, as many as a full reading", r.Omitted+len(r.Requirements))
	}
	r.Observe(Observation{Transcript: tr, Turns: allTurns(tr), Status: 200})
	if !slices.Equal(reqTexts(r), reqTexts(full)) || r.Omitted != full.Omitted || !slices.Equal(r.Progress, full.Progress) {
		t.Fatalf("resumed reading differs:\n%q %d\n%q %d", reqTexts(r), r.Omitted, reqTexts(full), full.Omitted)
	}
}
