package harness

import (
	"context"
	"errors"
	"math"
	"strconv"
)

// Arm is what a run compares: an rcm mode and, for router and rcm, the
// routing threshold (NaN for native).
type Arm struct {
	Mode      string
	Threshold float64
}

// Harness drives a real coding agent for `rcm bench run`. Other harnesses
// can be added by implementing it.
type Harness interface {
	// Name is recorded with each result ("opencode").
	Name() string
	// Open starts an agent session working in dir whose model calls go
	// through the proxy in arm's mode and threshold. title names the
	// session for people reading the harness's own logs.
	Open(ctx context.Context, arm Arm, dir, title string) (Agent, error)
	// Close stops the harness and every process it started.
	Close() error
}

// Agent is one harness session: one schedule's requests, in order.
type Agent interface {
	// ID is the session id the harness sends the proxy (x-session-id),
	// what the proxy's accounting is keyed by.
	ID() string
	// Prompt posts text as the user's next message and blocks until the
	// agent's turn ends. When ctx ends first, the turn is aborted and the
	// session stays usable. A turn the harness ended with an error of its
	// own returns an error wrapping ErrTurn.
	Prompt(ctx context.Context, text string) error
}

// ErrTurn marks a turn that the harness ended with an error (the model API
// failed, say): the request is not answered, but the session goes on.
var ErrTurn = errors.New("turn failed")

// thresholdHeader is the X-RCM-Threshold an arm's calls carry ("" for native).
func ThresholdHeader(a Arm) string {
	if math.IsNaN(a.Threshold) {
		return ""
	}
	return strconv.FormatFloat(a.Threshold, 'f', -1, 64)
}
