package transcript

import (
	"crypto/sha256"
	"encoding/hex"
)

// Fingerprint identifies a turn within its conversation: a hash chained over
// the opening texts of every turn up to and including it. Text, not raw
// bytes, is hashed because harnesses move cache markers between calls
// (Anthropic's cache_control) while the words stay put; the chain makes two
// identical requests at different points of a session distinct.
type Fingerprint [16]byte

func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

// Fingerprints returns one fingerprint per turn, in order. Successive calls
// of a growing session give the same fingerprints for the turns they share.
func (t *Transcript) Fingerprints() []Fingerprint {
	fps := make([]Fingerprint, len(t.Turns))
	var prev Fingerprint
	for i, turn := range t.Turns {
		h := sha256.New()
		h.Write(prev[:])
		h.Write([]byte{byte(turn.Kind)})
		h.Write([]byte(t.Messages[turn.Start].Text()))
		copy(fps[i][:], h.Sum(nil))
		prev = fps[i]
	}
	return fps
}

// Keep returns the indexes of the messages that remain when only the given
// turns (ascending turn indexes) are kept: the preamble, every system or
// developer message wherever it stands, and every message of a kept turn.
func (t *Transcript) Keep(turns []int) []int {
	kept := make([]int, 0, len(t.Messages))
	for i := 0; i < t.Preamble; i++ {
		kept = append(kept, i)
	}
	next := 0
	for ti, turn := range t.Turns {
		keep := next < len(turns) && turns[next] == ti
		if keep {
			next++
		}
		for i := turn.Start; i < turn.End; i++ {
			if keep || t.Messages[i].System() {
				kept = append(kept, i)
			}
		}
	}
	return kept
}
