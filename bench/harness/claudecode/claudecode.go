package claudecode

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rcm-dev/rcm/bench/harness"
	"github.com/rcm-dev/rcm/internal/client/claudecode"
)

// Harness is the harness.Harness of the real Claude Code client (`claude -p`):
// one Claude Code session per schedule, each request one `claude -p` turn
// in the checkout (--session-id, then --resume), with ANTHROPIC_BASE_URL at
// the arm's mode (<proxy>/<mode>) and X-RCM-Threshold sent through
// ANTHROPIC_CUSTOM_HEADERS. Each session gets a home of its own under Home,
// so that concurrent runs never share Claude Code's state files.
type Harness struct {
	Bin   string // the claude binary (claudecode.Install)
	Home  string // where the sessions' homes go
	Proxy string // rcm's root URL
	Model string // the model id Claude Code asks for
	Key   string // the upstream key Claude Code sends; rcm's own when empty
	// Context is the window past which Claude Code compacts
	// (--autocompact); its own default when 0.
	Context int
}

// Name implements Harness.
func (c *Harness) Name() string { return "claude-code" }

// Open implements Harness. title is not used: Claude Code's print mode
// makes no title call and names sessions by id.
func (c *Harness) Open(ctx context.Context, arm harness.Arm, dir, title string) (harness.Agent, error) {
	id := claudecode.NewID()
	env, err := claudecode.Env(filepath.Join(c.Home, id), strings.TrimRight(c.Proxy, "/")+"/"+arm.Mode, c.Key, harness.ThresholdHeader(arm))
	if err != nil {
		return nil, err
	}
	return &agent{s: &claudecode.Session{Bin: c.Bin, Dir: dir, Env: env, Model: c.Model, ID: id, AutoCompact: c.Context}}, nil
}

// Close implements Harness: every process ends with its turn.
func (c *Harness) Close() error { return nil }

type agent struct{ s *claudecode.Session }

func (a *agent) ID() string { return a.s.ID }

func (a *agent) Prompt(ctx context.Context, text string) error {
	err := a.s.Prompt(ctx, text)
	var te *claudecode.TurnError
	if errors.As(err, &te) {
		return fmt.Errorf("%w: %v", harness.ErrTurn, err)
	}
	return err
}
