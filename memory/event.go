package memory

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
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
	return w.do("append event "+session, func() error {
		return w.w.appendEvent(session, uint64(w.s.opts.MaxEvents), func(seq uint64) ([]byte, error) {
			e.Seq = seq
			return encodeJSON("event", binary.BigEndian.AppendUint64(nil, seq), e)
		})
	})
}

// Events returns the last limit events of session (all when limit <= 0),
// oldest first.
func (s *Store) Events(session string, limit int) (out []Event, err error) {
	err = s.view("events "+session, func(r reader) error {
		out, err = r.events(session, limit)
		return err
	})
	return out, err
}
