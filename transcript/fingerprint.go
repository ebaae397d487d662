package transcript

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// Fingerprint identifies a turn within its conversation: a hash chained over
// the opening texts of every turn up to and including it. Text, not raw
// bytes, is hashed because harnesses move cache markers between calls
// (Anthropic's cache_control) while the words stay put; the chain makes two
// identical requests at different points of a session distinct.
type Fingerprint [16]byte

func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

// Fingerprints returns one fingerprint per turn, in order (a copy of
// those Parse computed). Successive calls of a growing session give the
// same fingerprints for the turns they share.
func (t *Transcript) Fingerprints() []Fingerprint {
	if len(t.fps) == len(t.Turns) {
		return slices.Clone(t.fps)
	}
	fps := make([]Fingerprint, len(t.Turns))
	var c chain
	for i, turn := range t.Turns {
		fps[i] = c.next(turn.Kind, t.Messages[turn.Start].Text())
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

// chain hashes turns one after another, each fingerprint over the previous
// one, the turn's kind and its opening text (in one reused buffer: the
// hash.Hash interface would copy each text to write it).
type chain struct {
	prev Fingerprint
	buf  []byte
}

func (c *chain) next(kind TurnKind, text string) Fingerprint {
	c.buf = append(append(append(c.buf[:0], c.prev[:]...), byte(kind)), text...)
	sum := sha256.Sum256(c.buf)
	copy(c.prev[:], sum[:])
	return c.prev
}
