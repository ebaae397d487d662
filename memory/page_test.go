package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/transcript"
)

func TestSessionPage(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		// s0..s6 by last use; s2 and s3 share a time (ties go by id); s0 is
		// used again last, so it leads.
		at := map[string]time.Duration{"s0": 0, "s1": 1, "s2": 2, "s3": 2, "s4": 4, "s5": 5, "s6": 6}
		for _, id := range []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6"} {
			if err := s.touch(id, "", t0.Add(at[id]*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.touch("s0", "", t0.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		var got []string
		after, pages := "", 0
		for {
			page, next, err := s.SessionPage(3, after)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, p := range page {
				got = append(got, p.ID)
			}
			if next == "" {
				break
			}
			if len(page) != 3 {
				t.Fatalf("page %d holds %d sessions and has a next cursor", pages, len(page))
			}
			after = next
		}
		if want := "[s0 s6 s5 s4 s2 s3 s1]"; fmt.Sprint(got) != want || pages != 3 {
			t.Fatalf("pages %d, order %v, want 3 pages of %s", pages, got, want)
		}
		// An exact page has no next cursor; the default size applies to 0.
		if page, next, err := s.SessionPage(7, ""); err != nil || len(page) != 7 || next != "" {
			t.Fatalf("exact page: %d sessions, next %q, %v", len(page), next, err)
		}
		if page, _, err := s.SessionPage(0, ""); err != nil || len(page) != 7 {
			t.Fatalf("default page: %d sessions, %v", len(page), err)
		}
		for _, bad := range []string{"!!", "bm9jb2xvbg", "MTIzOg"} { // not base64, "nocolon", "123:"
			if _, _, err := s.SessionPage(3, bad); !errors.Is(err, ErrCursor) {
				t.Errorf("cursor %q: err %v, want ErrCursor", bad, err)
			}
		}
	})
}

func TestCountTurns(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		labels := []Label{{Task: "t1", Routed: true}, {Task: "t2", Routed: true}, {Task: "t1", Routed: true}, {Task: "t2"}}
		fps := []transcript.Fingerprint{fp(1), fp(2), fp(3), fp(4)}
		if err := s.putLabels("s", fps, labels); err != nil {
			t.Fatal(err)
		}
		tasks := []Task{{ID: "t1"}, {ID: "t2"}, {ID: "t3"}}
		if err := s.View(func(v *View) error { return v.CountTurns("s", tasks) }); err != nil {
			t.Fatal(err)
		}
		// t2's unrouted (fallback) label is a guess, not a turn of the task.
		if tasks[0].Turns != 2 || tasks[1].Turns != 1 || tasks[2].Turns != 0 {
			t.Fatalf("turns %+v", tasks)
		}
		if err := s.View(func(v *View) error { return v.CountTurns("none", tasks) }); err != nil || tasks[0].Turns != 0 {
			t.Fatalf("unknown session: %+v %v", tasks, err)
		}
	})
}

// TestEventDetails checks that a call's details survive the store and that
// AppendEvent numbers the caller's event.
func TestEventDetails(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		share := 0.75
		e := Event{Kind: "agent", Task: "t2", Confidence: 0.9, Threshold: 0.8, SystemTokens: 12,
			Turns:  []TurnStat{{Task: "t1", Tokens: 40, Dropped: true}, {Task: "t2", Tokens: 9}},
			Record: json.RawMessage(`{"role":"user","content":"<rcm-task-state task=\"t2\">"}`), PrefixShare: &share}
		err := s.Update(func(w *Tx) error { return w.AppendEvent("s", &e) })
		if err != nil || e.Seq != 1 {
			t.Fatalf("seq %d, %v", e.Seq, err)
		}
		evs, err := s.Events("s", 0)
		if err != nil || len(evs) != 1 {
			t.Fatal(evs, err)
		}
		a, _ := json.Marshal(evs[0])
		b, _ := json.Marshal(e)
		if string(a) != string(b) {
			t.Fatalf("stored %s\nwant   %s", a, b)
		}
	})
}

// FuzzCursor feeds arbitrary ?after= values to the cursor decoder: an error
// or a position, never a panic, and every cursor handed out reads back.
func FuzzCursor(f *testing.F) {
	f.Add("MTIzOnNfMQ")
	f.Add("")
	f.Add("!!")
	f.Fuzz(func(t *testing.T, c string) {
		s, err := decodeCursor(c)
		if err != nil {
			if !errors.Is(err, ErrCursor) {
				t.Fatalf("%q: %v", c, err)
			}
			return
		}
		back, err := decodeCursor(encodeCursor(s))
		if err != nil || back.ID != s.ID || !back.Updated.Equal(s.Updated) {
			t.Fatalf("%q: %+v -> %+v, %v", c, s, back, err)
		}
	})
}
