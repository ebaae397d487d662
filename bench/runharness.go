package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rcm-dev/rcm/internal/client/claudecode"
	"github.com/rcm-dev/rcm/internal/client/opencode"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
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

// OpenCode is the Harness for the real OpenCode client through `opencode
// serve`: one server for all runs, one OpenCode session per schedule, one
// provider per arm whose base URL carries the mode (<proxy>/<mode>/v1) and
// whose requests carry X-RCM-Threshold (the provider's options.headers,
// which @ai-sdk/openai-compatible sends on every call).
type OpenCode struct {
	srv   *opencode.Server
	model string
	home  string
}

// OpenCodeOptions configure NewOpenCode.
type OpenCodeOptions struct {
	Bin   string // the opencode binary (opencode.Install)
	Home  string // a private home for its state and config; created
	Dir   string // where the server runs; sessions name their own directory
	Proxy string // rcm's root URL
	Model opencode.Model
	Arms  []Arm
}

// NewOpenCode writes the configuration and starts `opencode serve`.
func NewOpenCode(ctx context.Context, o OpenCodeOptions) (*OpenCode, error) {
	env, err := opencode.Env(o.Home)
	if err != nil {
		return nil, err
	}
	cfg, err := openCodeConfig(o.Proxy, o.Model, o.Arms)
	if err != nil {
		return nil, err
	}
	path := opencode.GlobalConfig(o.Home)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	srv, err := opencode.Start(ctx, o.Bin, o.Dir, env, 0)
	if err != nil {
		return nil, err
	}
	return &OpenCode{srv: srv, model: o.Model.ID, home: o.Home}, nil
}

// ArmProvider is the OpenCode provider id of an arm: the mode's name, with
// the threshold appended for router and rcm ("rcm_t0_8").
func ArmProvider(a Arm) string {
	if math.IsNaN(a.Threshold) {
		return a.Mode
	}
	return a.Mode + "_t" + strings.ReplaceAll(strconv.FormatFloat(a.Threshold, 'f', -1, 64), ".", "_")
}

// openCodeConfig is opencode.Config's file with, for each arm, a copy of
// its mode's provider that sends the arm's threshold as a header.
func openCodeConfig(proxy string, model opencode.Model, arms []Arm) ([]byte, error) {
	var modes []string
	for _, a := range arms {
		if !slices.Contains(modes, a.Mode) {
			modes = append(modes, a.Mode)
		}
	}
	b, err := opencode.Config{Proxy: proxy, Modes: modes, Models: []opencode.Model{model}}.JSON()
	if err != nil {
		return nil, err
	}
	for _, a := range arms {
		id := ArmProvider(a)
		if id == a.Mode {
			continue
		}
		raw := []byte(gjson.GetBytes(b, "provider."+a.Mode).Raw)
		raw, err = sjson.SetBytes(raw, "name", fmt.Sprintf("rcm, %s mode, threshold %g", a.Mode, a.Threshold))
		if err == nil {
			raw, err = sjson.SetBytes(raw, "options.headers.X-RCM-Threshold", thresholdHeader(a))
		}
		if err == nil {
			b, err = sjson.SetRawBytes(b, "provider."+id, raw)
		}
		if err != nil {
			return nil, fmt.Errorf("bench: opencode config: %w", err)
		}
	}
	return b, nil
}

// Name implements Harness.
func (o *OpenCode) Name() string { return "opencode" }

// Open implements Harness: a new OpenCode session in dir. Giving it a
// title keeps OpenCode from making a title call of its own.
func (o *OpenCode) Open(ctx context.Context, arm Arm, dir, title string) (Agent, error) {
	s, err := o.srv.CreateSession(ctx, dir, title)
	if err != nil {
		return nil, fmt.Errorf("%w; opencode output: %s", err, lastLines(o.srv.Output(), 10))
	}
	return &openCodeAgent{oc: o, id: s.ID, dir: dir, provider: ArmProvider(arm)}, nil
}

// Close implements Harness: it stops the server and everything it started,
// and keeps the end of its output in the harness home (opencode.log).
func (o *OpenCode) Close() error {
	o.srv.Close()
	return os.WriteFile(filepath.Join(o.home, "opencode.log"), []byte(o.srv.Output()), 0o644)
}

type openCodeAgent struct {
	oc                *OpenCode
	id, dir, provider string
}

func (a *openCodeAgent) ID() string { return a.id }

func (a *openCodeAgent) Prompt(ctx context.Context, text string) error {
	_, err := a.oc.srv.Prompt(ctx, a.id, a.dir, a.provider, a.oc.model, text)
	var te *opencode.TurnError
	if errors.As(err, &te) {
		return fmt.Errorf("%w: %v", ErrTurn, err)
	}
	return err
}

// ClaudeCode is the Harness for the real Claude Code client (`claude -p`):
// one Claude Code session per schedule, each request one `claude -p` turn
// in the checkout (--session-id, then --resume), with ANTHROPIC_BASE_URL at
// the arm's mode (<proxy>/<mode>) and X-RCM-Threshold sent through
// ANTHROPIC_CUSTOM_HEADERS. Each session gets a home of its own under Home,
// so that concurrent runs never share Claude Code's state files.
type ClaudeCode struct {
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
func (c *ClaudeCode) Name() string { return "claude-code" }

// Open implements Harness. title is not used: Claude Code's print mode
// makes no title call and names sessions by id.
func (c *ClaudeCode) Open(ctx context.Context, arm Arm, dir, title string) (Agent, error) {
	id := claudecode.NewID()
	env, err := claudecode.Env(filepath.Join(c.Home, id), strings.TrimRight(c.Proxy, "/")+"/"+arm.Mode, c.Key, thresholdHeader(arm))
	if err != nil {
		return nil, err
	}
	return &claudeAgent{s: &claudecode.Session{Bin: c.Bin, Dir: dir, Env: env, Model: c.Model, ID: id, AutoCompact: c.Context}}, nil
}

// Close implements Harness: every process ends with its turn.
func (c *ClaudeCode) Close() error { return nil }

type claudeAgent struct{ s *claudecode.Session }

func (a *claudeAgent) ID() string { return a.s.ID }

func (a *claudeAgent) Prompt(ctx context.Context, text string) error {
	err := a.s.Prompt(ctx, text)
	var te *claudecode.TurnError
	if errors.As(err, &te) {
		return fmt.Errorf("%w: %v", ErrTurn, err)
	}
	return err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
