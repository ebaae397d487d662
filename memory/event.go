package memory

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Event is one model call of a session and what rcm did to it, kept for
// the inspector. The fields after TokensOut are the call's details, recorded
// after the response for calls whose body was parsed; older events and
// native calls without a parsed body lack them.
type Event struct {
	Seq        uint64    `json:"seq"` // set by AppendEvent; increases per session
	At         time.Time `json:"at"`
	Kind       string    `json:"kind"` // call kind: agent, title, compaction, subagent
	Mode       string    `json:"mode"` // native, router, rcm
	Task       string    `json:"task,omitempty"`
	Confidence float64   `json:"confidence"`
	Method     string    `json:"method,omitempty"`
	Fallback   string    `json:"fallback"` // none, threshold, error, side-call
	TokensIn   int       `json:"tokens_in"`
	TokensOut  int       `json:"tokens_out"`

	// Threshold is the confidence below which this call would fall back
	// (the one in effect for it); it fell back when Confidence < Threshold.
	Threshold float64 `json:"threshold,omitempty"`
	// SystemTokens estimates the leading system messages, always kept.
	SystemTokens int `json:"system_tokens,omitempty"`
	// Turns are the request's turns in order, the last one current: each
	// one's task label, token estimate and whether it was dropped.
	Turns []TurnStat `json:"turns,omitempty"`
	// Record is the task-record message injected into the call (rcm mode):
	// the JSON object forwarded (re-encoded, so its escapes may differ).
	Record json.RawMessage `json:"record,omitempty"`
	// PrefixShare is the share of the forwarded context (the messages) that
	// a provider's prompt cache would serve: the longest byte prefix it
	// shares with the session's earlier forwarded contexts in the same
	// mode within the cache's lifetime; nil when none was at hand.
	PrefixShare *float64 `json:"prefix_share,omitempty"`
	// Client is the harness that made the call (OpenCode, Claude Code,
	// Codex), as its headers say; "" when they do not.
	Client string `json:"client,omitempty"`
}

// TurnStat is one turn of a call as the inspector shows it.
type TurnStat struct {
	Task    string `json:"task,omitempty"` // "" when the turn has no label
	Tokens  int    `json:"tokens"`         // estimate of the turn's messages as received
	Dropped bool   `json:"dropped,omitempty"`
}

// AppendEvent appends e to the log of session, numbering it, and deletes
// the oldest events beyond Options.MaxEvents; it sets e.Seq.
func (w *Tx) AppendEvent(session string, e *Event) error {
	if err := checkID("session", session); err != nil {
		return fmt.Errorf("memory: append event: %w", err)
	}
	max := uint64(w.s.opts.MaxEvents)
	return w.do("append event "+session, func(tx *bolt.Tx) error {
		b, err := createSessionBucket(tx, session, bucketEvents)
		if err != nil {
			return err
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		e.Seq = seq
		key := binary.BigEndian.AppendUint64(nil, seq)
		if err := putJSON(b, "event", key, e); err != nil {
			return err
		}
		// Keys are sequence numbers deleted only from the front, so the
		// log holds the keys first..seq: drop those below seq-max+1.
		if seq <= max {
			return nil
		}
		keep := seq - max + 1
		c := b.Cursor()
		// A key that is not a sequence number (bad data) stops the trim.
		for k, _ := c.First(); len(k) == 8 && binary.BigEndian.Uint64(k) < keep; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Events returns the last limit events of session (all when limit <= 0),
// oldest first.
func (s *Store) Events(session string, limit int) (out []Event, err error) {
	err = s.view("events "+session, func(tx *bolt.Tx) error {
		out, err = readEvents(tx, session, limit)
		return err
	})
	return out, err
}

func readEvents(tx *bolt.Tx, session string, limit int) ([]Event, error) {
	var out []Event
	b := sessionBucket(tx, session, bucketEvents)
	if b == nil {
		return nil, nil
	}
	c := b.Cursor()
	for k, raw := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, raw = c.Prev() {
		var e Event
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("event %x: corrupt value: %w", k, err)
		}
		out = append(out, e)
	}
	slices.Reverse(out)
	return out, nil
}
