package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rcm-dev/rcm/bench/harness"
	"github.com/rcm-dev/rcm/bench/progress"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/bench/stat"
)

// Defaults of Options.
const (
	DefaultBudget         = 900 * time.Second
	DefaultContinuations  = 3
	DefaultContinuePrompt = "continue"
)

// DefaultThresholds is what Options.Thresholds' zero value means: a
// real run is costly, so one threshold, the proxy's default.
var DefaultThresholds = []float64{0.8}

// Options configure Run. Zero values take the documented defaults.
type Options struct {
	// Proxy is rcm's root URL (http://127.0.0.1:PORT), checked with
	// GET /rcm/healthz before any model call. Required.
	Proxy string
	// Meter is the accounting in front of the proxy. Required.
	Meter *Meter
	// Harness drives the agent. Required.
	Harness harness.Harness
	// Repos holds the local clones. Required.
	Repos *Repos
	// Out is the folder of RunsFile, patches/, logs/ and (unless Work is
	// set) the checkouts under work/. Required.
	Out string
	// Work is where each run's checkouts ws1..ws5 are made. Default Out/work.
	Work string
	// Modes to run. Default native, router, rcm.
	Modes []string
	// Thresholds for router and rcm. Default DefaultThresholds.
	Thresholds []float64
	// Conditions to run. Default base and switch.
	Conditions []string
	// Sessions limits the run to these session ids. Default all.
	Sessions []string
	// Repeats of every (session, condition, mode, threshold). Default 1.
	Repeats int
	// Budget is the time a request may take before it is interrupted and a
	// continuation sent. Default DefaultBudget.
	Budget time.Duration
	// Continuations after a request's budget runs out, each with a fresh
	// budget. Default DefaultContinuations; negative means none.
	Continuations int
	// ContinuePrompt is the continuation's text. Default "continue".
	ContinuePrompt string
	// VerifyTimeout bounds a test command. Default VerifyTimeout.
	VerifyTimeout time.Duration
	// Concurrency is how many runs go at once. Default 1.
	Concurrency int
	// Model is recorded with each result.
	Model string
	// Keep leaves each run's checkouts in place for inspection.
	Keep bool
	// Progress, when set, is told after every request: Calls counts
	// requests, Sessions counts finished runs.
	Progress func(progress.Progress)
	// Log receives one line per finished or failed run. Default: discarded.
	Log io.Writer
}

func (o *Options) validate() error {
	var errs []error
	if o.Proxy == "" {
		errs = append(errs, errors.New("no proxy URL"))
	}
	if o.Meter == nil || o.Harness == nil || o.Repos == nil {
		errs = append(errs, errors.New("no meter, harness or repositories"))
	}
	if o.Out == "" {
		errs = append(errs, errors.New("no output folder"))
	}
	if len(o.Modes) == 0 {
		o.Modes = benchspec.DefaultModes
	}
	for _, m := range o.Modes {
		if m != benchspec.ModeNative && m != benchspec.ModeRouter && m != benchspec.ModeRCM {
			errs = append(errs, fmt.Errorf("mode %q: want native, router or rcm", m))
		}
	}
	if len(o.Thresholds) == 0 {
		o.Thresholds = DefaultThresholds
	}
	for _, t := range o.Thresholds {
		if !(t > 0 && t <= 1) { // rcm refuses 0 (proxy.ParseThreshold)
			errs = append(errs, fmt.Errorf("threshold %v: want a number in (0, 1]", t))
		}
	}
	if len(o.Conditions) == 0 {
		o.Conditions = []string{ConditionBase, ConditionSwitch}
	}
	for _, c := range o.Conditions {
		if c != ConditionBase && c != ConditionSwitch {
			errs = append(errs, fmt.Errorf("condition %q: want base or switch", c))
		}
	}
	if o.Repeats < 0 {
		errs = append(errs, fmt.Errorf("repeats %d: want at least 1", o.Repeats))
	}
	o.Repeats = max(o.Repeats, 1)
	if o.Budget < 0 {
		errs = append(errs, fmt.Errorf("budget %v: negative", o.Budget))
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	switch {
	case o.Continuations == 0:
		o.Continuations = DefaultContinuations
	case o.Continuations < 0:
		o.Continuations = 0
	}
	if o.ContinuePrompt == "" {
		o.ContinuePrompt = DefaultContinuePrompt
	}
	o.Concurrency = max(o.Concurrency, 1)
	if o.Work == "" {
		o.Work = filepath.Join(o.Out, "work")
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	o.Proxy = strings.TrimRight(o.Proxy, "/")
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench: run: %w", err)
	}
	return nil
}

// Arms returns the arms of the options: native once, router and rcm at
// each threshold (DefaultModes and DefaultThresholds when unset).
func (o *Options) Arms() []harness.Arm {
	var arms []harness.Arm
	modes, thresholds := o.Modes, o.Thresholds
	if len(modes) == 0 {
		modes = benchspec.DefaultModes
	}
	if len(thresholds) == 0 {
		thresholds = DefaultThresholds
	}
	for _, m := range modes {
		if m == benchspec.ModeNative {
			arms = append(arms, harness.Arm{Mode: m, Threshold: math.NaN()})
			continue
		}
		for _, t := range thresholds {
			arms = append(arms, harness.Arm{Mode: m, Threshold: t})
		}
	}
	return arms
}

// runUnit is one run: a session's schedule in one arm, one repeat.
type runUnit struct {
	sess      *benchspec.Session
	condition string
	arm       harness.Arm
	repeat    int
	key       string
	steps     []benchspec.Step
	commit    string // resolved base commit of the session's repository
}

// Stats says what Run did.
type Stats struct {
	Total, Skipped, Done, Failed int
}

// Run drives the harness through each session's schedules in each arm
// and repeat, scores the focus task's patch, and appends a Result per
// run to Out/RunsFile as each finishes. Runs already in that file are
// skipped, so a rerun resumes. Bad setups (options, a repository or
// commit not found, the proxy not answering) fail before any model call.
// When ctx ends, runs under way are abandoned (their checkouts removed,
// nothing appended) and Run returns ctx's error. Runs that fail are
// logged, left out of the file (a rerun retries them) and reported in the
// error once every other run is done.
func Run(ctx context.Context, spec *benchspec.Spec, opts Options) (Stats, error) {
	var st Stats
	if err := opts.validate(); err != nil {
		return st, err
	}
	units, err := planRuns(ctx, spec, &opts)
	if err != nil {
		return st, err
	}
	if err := checkProxy(ctx, opts.Proxy); err != nil {
		return st, err
	}
	for _, d := range []string{opts.Out, opts.Work, filepath.Join(opts.Out, "patches"), filepath.Join(opts.Out, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return st, fmt.Errorf("bench: %w", err)
		}
	}
	path := filepath.Join(opts.Out, RunsFile)
	done := map[string]bool{}
	if _, err := os.Stat(path); err == nil {
		prev, err := ReadRuns(path)
		if err != nil {
			return st, err
		}
		for _, r := range prev {
			done[r.Key] = true
		}
	}
	log, err := openRunLog(path)
	if err != nil {
		return st, err
	}
	defer log.close()

	st.Total = len(units)
	var todo []*runUnit
	total := 0
	for _, u := range units {
		if done[u.key] {
			st.Skipped++
			continue
		}
		todo = append(todo, u)
		total += len(u.steps)
	}
	if st.Skipped > 0 {
		fmt.Fprintf(opts.Log, "resuming: %d of %d runs already in %s\n", st.Skipped, st.Total, path)
	}
	r := &realRun{spec: spec, opts: &opts, log: log, track: progress.NewTracker(total, len(todo), opts.Progress)}
	var mu sync.Mutex
	var failures []error
	progress.Parallel(ctx, opts.Concurrency, len(todo), func(i int) {
		u := todo[i]
		err := r.run(ctx, u)
		mu.Lock()
		switch {
		case err == nil:
			st.Done++
		case ctx.Err() == nil:
			st.Failed++
			failures = append(failures, fmt.Errorf("run %s: %w", u.key, err))
			fmt.Fprintf(opts.Log, "run %s failed: %v\n", u.key, err)
		}
		mu.Unlock()
		r.track.Add(0, 1)
	})
	if ctx.Err() != nil {
		return st, ctx.Err()
	}
	return st, errors.Join(failures...)
}

// planRuns lists the runs in order (repeat, session, condition, arm) and
// checks that every repository and base commit they need is there.
func planRuns(ctx context.Context, spec *benchspec.Spec, opts *Options) ([]*runUnit, error) {
	var sessions []*benchspec.Session
	for i := range spec.Sessions {
		s := &spec.Sessions[i]
		if len(opts.Sessions) == 0 || slices.Contains(opts.Sessions, s.ID) {
			sessions = append(sessions, s)
		}
	}
	for _, id := range opts.Sessions {
		if _, ok := spec.Session(id); !ok {
			return nil, fmt.Errorf("bench: run: session %q: not in the spec", id)
		}
	}
	if len(sessions) == 0 {
		return nil, errors.New("bench: run: the spec has no sessions")
	}
	commits, err := opts.Repos.Commits(ctx, spec, sessions)
	if err != nil {
		return nil, err
	}
	if err := checkTestPatches(ctx, spec, sessions, opts.Repos, commits); err != nil {
		return nil, err
	}
	var units []*runUnit
	for rep := range opts.Repeats {
		for _, s := range sessions {
			for _, c := range opts.Conditions {
				steps := s.Base
				if c == ConditionSwitch {
					steps = s.Switch
				}
				for _, a := range opts.Arms() {
					focus, _ := spec.Task(s.Focus)
					units = append(units, &runUnit{
						sess: s, condition: c, arm: a, repeat: rep, steps: steps,
						key:    Key(s.ID, c, a.Mode, a.Threshold, rep),
						commit: commits[repoKey(focus)],
					})
				}
			}
		}
	}
	return units, nil
}

// checkTestPatches makes sure every focus task's test patch applies to its
// base commit, so that a broken one fails before any model call.
func checkTestPatches(ctx context.Context, spec *benchspec.Spec, sessions []*benchspec.Session, repos *Repos, commits map[string]string) error {
	var errs []error
	checked := map[string]bool{}
	for _, s := range sessions {
		t, _ := spec.Task(s.Focus)
		if t.Verifier.TestPatch == "" || checked[t.ID] {
			continue
		}
		checked[t.ID] = true
		if err := repos.CheckPatch(ctx, t.Repository, commits[repoKey(t)], []byte(t.Verifier.TestPatch)); err != nil {
			errs = append(errs, fmt.Errorf("bench: task %s: verifier.test_patch: %w", t.ID, err))
		}
	}
	return errors.Join(errs...)
}

// checkProxy asks the proxy's health route.
func checkProxy(ctx context.Context, proxy string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, proxy+"/rcm/healthz", nil)
	if err != nil {
		return fmt.Errorf("bench: proxy %q: %w", proxy, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("bench: proxy %s does not answer: %w", proxy, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("bench: proxy %s: health check answered %s", proxy, resp.Status)
	}
	return nil
}

// CheckUpstream makes sure the model endpoint (an OpenAI-compatible base
// URL, ".../v1") answers before any run starts: GET /models with key. Any
// HTTP answer but 401 and 403 will do (not every endpoint lists models);
// no answer, or a refused key, is an error saying so.
func CheckUpstream(ctx context.Context, base, key string) error {
	return checkUpstream(ctx, base, strings.TrimRight(base, "/")+"/models", "Authorization", "Bearer "+key, key)
}

// CheckMessagesUpstream is CheckUpstream for an Anthropic Messages base URL
// (as ANTHROPIC_BASE_URL, without /v1): GET /v1/models with key as
// x-api-key.
func CheckMessagesUpstream(ctx context.Context, base, key string) error {
	return checkUpstream(ctx, base, strings.TrimRight(base, "/")+"/v1/models", "X-Api-Key", key, key)
}

func checkUpstream(ctx context.Context, base, url, header, value, key string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("bench: upstream %q: %w", base, err)
	}
	if key != "" {
		req.Header.Set(header, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("bench: upstream %s is unreachable: %w", base, err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return fmt.Errorf("bench: upstream %s refused the key (%s): set RCM_UPSTREAM_KEY", base, resp.Status)
	}
	return nil
}

// realRun holds a Run's shared state.
type realRun struct {
	spec  *benchspec.Spec
	opts  *Options
	log   *runLog
	track *progress.Tracker

	mu sync.Mutex // appends to log
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// fileName turns a run key into a file or folder name.
func fileName(key string) string { return unsafeName.ReplaceAllString(key, "_") }

// run does one run and appends its result.
func (r *realRun) run(ctx context.Context, u *runUnit) error {
	start := time.Now()
	spec, opts := r.spec, r.opts
	focus, _ := spec.Task(u.sess.Focus)
	dir := filepath.Join(opts.Work, fileName(u.key))
	members := append([]string{u.sess.Focus}, u.sess.Distractors...)
	checkouts := map[string]*Checkout{}
	var made []*Checkout
	defer func() {
		if opts.Keep && ctx.Err() == nil {
			return
		}
		for _, c := range made {
			opts.Repos.Remove(c)
		}
		os.RemoveAll(dir)
	}()
	for _, id := range members {
		t, _ := spec.Task(id)
		commit := u.commit
		if t.Repository != focus.Repository || t.BaseCommit != focus.BaseCommit {
			c, err := opts.Repos.Commit(ctx, t.Repository, t.BaseCommit)
			if err != nil {
				return err
			}
			commit = c
		}
		c, err := opts.Repos.Add(ctx, t.Repository, commit, filepath.Join(dir, u.sess.Workspaces[id]))
		if err != nil {
			return err
		}
		checkouts[id] = c
		made = append(made, c)
	}

	agent, err := opts.Harness.Open(ctx, u.arm, dir, "rcm bench "+u.key)
	if err != nil {
		return err
	}
	res := &Result{
		Key: u.key, Session: u.sess.ID, Task: focus.ID, Kind: u.sess.Kind, Condition: u.condition,
		Mode: u.arm.Mode, Threshold: stat.Num(u.arm.Threshold), Repeat: u.repeat,
		Harness: opts.Harness.Name(), Model: opts.Model, Commit: u.commit, Started: start, HarnessS: agent.ID(),
	}
	dist := map[string]*DistractorResult{}
	for _, id := range u.sess.Distractors {
		dist[id] = &DistractorResult{Task: id}
	}
	for _, step := range u.steps {
		t, _ := spec.Task(step.Task)
		text := strings.ReplaceAll(t.Stages[step.Stage].Request, benchspec.CheckoutPlaceholder, checkouts[step.Task].Dir)
		o, err := r.request(ctx, agent, text)
		if err != nil {
			return err
		}
		r.track.Add(1, 0)
		if d := dist[step.Task]; d != nil {
			d.Requests++
			if o.answered {
				d.Answered++
			}
			continue
		}
		res.Requests++
		res.Continuations += o.continuations
		if o.answered {
			res.Answered++
		}
		if o.timedOut {
			res.Timeouts++
		}
		if o.turnErr {
			res.TurnErrors++
		}
	}
	res.Usage = opts.Meter.Usage(agent.ID())
	if got, want := opts.Meter.Threshold(agent.ID()), harness.ThresholdHeader(u.arm); res.Calls > 0 && got != want {
		return fmt.Errorf("bench: the harness sent X-RCM-Threshold %q, want %q: its provider configuration is not applied", got, want)
	}

	patch, err := checkouts[focus.ID].Diff(ctx)
	if err != nil {
		return err
	}
	base := filepath.Join(opts.Out, "patches", fileName(u.key)+".diff")
	if err := os.WriteFile(base, patch, 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if u.condition == ConditionSwitch {
		for _, id := range u.sess.Distractors {
			out, err := git(ctx, checkouts[id].Dir, "status", "--porcelain")
			if err != nil {
				return fmt.Errorf("bench: checkout of %s: %w", id, err)
			}
			dist[id].Changed = strings.TrimSpace(out) != ""
			res.Distractors = append(res.Distractors, *dist[id])
		}
	}
	clean, err := opts.Repos.Add(ctx, focus.Repository, u.commit, filepath.Join(dir, "verify"))
	if err != nil {
		return err
	}
	made = append(made, clean)
	score, out, err := Verify(ctx, clean, patch, focus.Verifier, opts.VerifyTimeout)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("task %s: %w", focus.ID, err)
	}
	res.Score = score
	if err := os.WriteFile(filepath.Join(opts.Out, "logs", fileName(u.key)+".verify.log"), out, 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	res.Seconds = time.Since(start).Seconds()
	r.mu.Lock()
	err = r.log.append(res)
	r.mu.Unlock()
	if err != nil {
		return err
	}
	verdict := "unresolved"
	if res.Resolved {
		verdict = "resolved"
	}
	fmt.Fprintf(opts.Log, "run %s: %s (%d/%d requests answered, %d calls, %.0fs)\n",
		u.key, verdict, res.Answered, res.Requests, res.Calls, res.Seconds)
	return nil
}

// outcome is how one request went.
type outcome struct {
	answered, timedOut, turnErr bool
	continuations               int
}

// request posts text with the time budget; when it runs out, the turn is
// aborted and up to Continuations "continue" prompts follow, each with a
// fresh budget. A harness error other than a failed turn, or ctx ending,
// is returned.
func (r *realRun) request(ctx context.Context, a harness.Agent, text string) (outcome, error) {
	var o outcome
	for attempt := 0; ; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, r.opts.Budget)
		err := a.Prompt(pctx, text)
		expired := pctx.Err() != nil
		cancel()
		switch {
		case ctx.Err() != nil:
			return o, ctx.Err()
		case err == nil:
			o.answered = true
			return o, nil
		case errors.Is(err, harness.ErrTurn):
			o.turnErr = true
			return o, nil
		case !expired:
			return o, err
		}
		if attempt == r.opts.Continuations {
			o.timedOut = true
			return o, nil
		}
		o.continuations++
		text = r.opts.ContinuePrompt
	}
}
