package fit

import (
	"math"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
)

// TestCeilings: a parser (4 bytes), a cache built on it (2), a CLI built
// on the cache that needs the parser too (1), then a return to the parser
// (2). Keeping only the parent task, the CLI misses the parser; keeping
// the chain it does not. The return drops the cache and the CLI either
// way; a synthetic session is not counted with the real ones.
func TestCeilings(t *testing.T) {
	s := &Session{Real: true, Turns: []chat.Turn{{Request: "aaaa"}, {Request: "bb"}, {Request: "c"}, {Request: "dd"}}, Gold: []Gold{
		{Task: "T1", Kind: KindNew},
		{Task: "T2", Kind: KindNew, Needs: []string{"T1"}},
		{Task: "T3", Kind: KindNew, Needs: []string{"T1", "T2"}},
		{Task: "T1", Kind: KindReturn, Needs: []string{"T1"}},
	}}
	synth := &Session{Turns: s.Turns, Gold: []Gold{{Task: "T1", Kind: KindNew}, {Task: "T9", Kind: KindNew}}}
	got := Ceilings([]*Session{s, synth}, true)
	want := []Ceiling{{Chain: false, Requests: 3, Dropped: 1, Lost: 1.0 / 3}, {Chain: true, Requests: 3, Dropped: 1, Lost: 0}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for k := range want {
		if got[k].Chain != want[k].Chain || got[k].Requests != want[k].Requests || math.Abs(got[k].Dropped-want[k].Dropped) > 1e-9 || math.Abs(got[k].Lost-want[k].Lost) > 1e-9 {
			t.Fatalf("rule %d: got %+v, want %+v", k, got[k], want[k])
		}
	}
}
