package opencode

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

	"github.com/rcm-dev/rcm/bench/harness"
	"github.com/rcm-dev/rcm/internal/client/opencode"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Harness is the harness.Harness of the real OpenCode client, through `opencode
// serve`: one server for all runs, one OpenCode session per schedule, one
// provider per arm whose base URL carries the mode (<proxy>/<mode>/v1) and
// whose requests carry X-RCM-Threshold (the provider's options.headers,
// which @ai-sdk/openai-compatible sends on every call).
type Harness struct {
	srv   *opencode.Server
	model string
	home  string
}

// Options configure New.
type Options struct {
	Bin   string // the opencode binary (opencode.Install)
	Home  string // a private home for its state and config; created
	Dir   string // where the server runs; sessions name their own directory
	Proxy string // rcm's root URL
	Model opencode.Model
	Arms  []harness.Arm
}

// New writes the configuration and starts `opencode serve`.
func New(ctx context.Context, o Options) (*Harness, error) {
	env, err := opencode.Env(o.Home)
	if err != nil {
		return nil, err
	}
	cfg, err := config(o.Proxy, o.Model, o.Arms)
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
	return &Harness{srv: srv, model: o.Model.ID, home: o.Home}, nil
}

// armProvider is the OpenCode provider id of an arm: the mode's name, with
// the threshold appended for router and rcm ("rcm_t0_8").
func armProvider(a harness.Arm) string {
	if math.IsNaN(a.Threshold) {
		return a.Mode
	}
	return a.Mode + "_t" + strings.ReplaceAll(strconv.FormatFloat(a.Threshold, 'f', -1, 64), ".", "_")
}

// config is opencode.Config's file with, for each arm, a copy of
// its mode's provider that sends the arm's threshold as a header.
func config(proxy string, model opencode.Model, arms []harness.Arm) ([]byte, error) {
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
		id := armProvider(a)
		if id == a.Mode {
			continue
		}
		raw := []byte(gjson.GetBytes(b, "provider."+a.Mode).Raw)
		raw, err = sjson.SetBytes(raw, "name", fmt.Sprintf("rcm, %s mode, threshold %g", a.Mode, a.Threshold))
		if err == nil {
			raw, err = sjson.SetBytes(raw, "options.headers.X-RCM-Threshold", harness.ThresholdHeader(a))
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
func (o *Harness) Name() string { return "opencode" }

// Open implements Harness: a new OpenCode session in dir. Giving it a
// title keeps OpenCode from making a title call of its own.
func (o *Harness) Open(ctx context.Context, arm harness.Arm, dir, title string) (harness.Agent, error) {
	s, err := o.srv.CreateSession(ctx, dir, title)
	if err != nil {
		return nil, fmt.Errorf("%w; opencode output: %s", err, lastLines(o.srv.Output(), 10))
	}
	return &agent{oc: o, id: s.ID, dir: dir, provider: armProvider(arm)}, nil
}

// Close implements Harness: it stops the server and everything it started,
// and keeps the end of its output in the harness home (opencode.log).
func (o *Harness) Close() error {
	o.srv.Close()
	return os.WriteFile(filepath.Join(o.home, "opencode.log"), []byte(o.srv.Output()), 0o644)
}

type agent struct {
	oc                *Harness
	id, dir, provider string
}

func (a *agent) ID() string { return a.id }

func (a *agent) Prompt(ctx context.Context, text string) error {
	_, err := a.oc.srv.Prompt(ctx, a.id, a.dir, a.provider, a.oc.model, text)
	var te *opencode.TurnError
	if errors.As(err, &te) {
		return fmt.Errorf("%w: %v", harness.ErrTurn, err)
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
