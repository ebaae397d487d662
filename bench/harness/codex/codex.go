package codex

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rcm-dev/rcm/bench/harness"
	"github.com/rcm-dev/rcm/internal/client/codex"
)

// Harness is the harness.Harness of the real Codex CLI (`codex exec`): one Codex
// thread per schedule, each request one `codex exec` turn in the run's
// folder (`codex exec resume <thread>` after the first), with the
// provider's base URL at the arm's mode (<proxy>/<mode>/v1), over HTTP.
// The provider sends X-RCM-Threshold, and X-Session-Id with the agent's id
// (Codex names its thread only once the first turn runs, and the meter
// needs the id before). Each session gets a CODEX_HOME of its own under
// Home, so that concurrent runs never share Codex's state.
type Harness struct {
	Bin   string // the codex binary (codex.Install)
	Home  string // where the sessions' homes go
	Proxy string // rcm's root URL
	Model string // the model id Codex asks for
	Key   string // the upstream key Codex sends; rcm's own when empty
	// Context is the model's context window, which Codex compacts
	// against (model_context_window); Codex's own figure when 0.
	Context int
}

// Name implements Harness.
func (c *Harness) Name() string { return "codex" }

// Open implements Harness. title is not used: `codex exec` makes no title
// call.
func (c *Harness) Open(ctx context.Context, arm harness.Arm, dir, title string) (harness.Agent, error) {
	id := "codex-" + rand.Text()
	headers := map[string]string{"X-Session-Id": id}
	if t := harness.ThresholdHeader(arm); t != "" {
		headers["X-RCM-Threshold"] = t
	}
	cfg := codex.Config{BaseURL: strings.TrimRight(c.Proxy, "/") + "/" + arm.Mode + "/v1", Headers: headers, Context: c.Context}
	env, err := codex.Env(filepath.Join(c.Home, id), cfg, c.Key)
	if err != nil {
		return nil, err
	}
	return &agent{id: id, s: &codex.Session{Bin: c.Bin, Dir: dir, Env: env, Model: c.Model}}, nil
}

// Close implements Harness: every process ends with its turn.
func (c *Harness) Close() error { return nil }

type agent struct {
	id string
	s  *codex.Session
}

func (a *agent) ID() string { return a.id }

func (a *agent) Prompt(ctx context.Context, text string) error {
	err := a.s.Prompt(ctx, text)
	var te *codex.TurnError
	if errors.As(err, &te) {
		return fmt.Errorf("%w: %v", harness.ErrTurn, err)
	}
	return err
}
