package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	claudeharness "github.com/rcm-dev/rcm/bench/harness/claudecode"
	codexharness "github.com/rcm-dev/rcm/bench/harness/codex"
	opencodeharness "github.com/rcm-dev/rcm/bench/harness/opencode"
	"github.com/rcm-dev/rcm/bench/progress"
	"github.com/rcm-dev/rcm/bench/report"
	"github.com/rcm-dev/rcm/bench/run"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/internal/client/claudecode"
	"github.com/rcm-dev/rcm/internal/client/codex"
	"github.com/rcm-dev/rcm/internal/client/opencode"
	"github.com/rcm-dev/rcm/internal/scripted"
	"github.com/rcm-dev/rcm/proxy"
)

// runConfig is what `rcm bench run` is told.
type runConfig struct {
	spec, modes, conditions, sessions            string
	thresholds                                   []float64
	repeats, continuations, concurrency, context int64
	out, upstream, key, model, repos, harness    string
	opencodeBin, claudeBin, codexBin, db, keep   string
	budget, verifyTimeout                        time.Duration
}

func runOptions(c *runConfig) []option {
	return []option{
		{flag: "spec", env: "RCM_BENCH_SPEC", help: "bench spec file (bench/SPEC.md); required", set: stringOpt(&c.spec)},
		{flag: "upstream", env: "RCM_UPSTREAM", help: "the model endpoint, an OpenAI-compatible base URL ending in /v1 (for claude-code an Anthropic Messages base URL, without /v1); required", set: stringOpt(&c.upstream)},
		{flag: "upstream-key", env: "RCM_UPSTREAM_KEY", help: "the endpoint's API key (use the environment)", set: stringOpt(&c.key), secret: true},
		{flag: "model", env: "RCM_BENCH_MODEL", help: "the upstream model id the harness asks for; required", set: stringOpt(&c.model)},
		{flag: "repos", env: "RCM_BENCH_REPOS", help: "folder of local git clones, DIR/owner/name, DIR/name or DIR/owner__name; required", set: stringOpt(&c.repos)},
		{flag: "out", env: "RCM_BENCH_OUT", help: "folder for runs.jsonl, patches, logs and the report (default ./bench-run)", set: stringOpt(&c.out)},
		{flag: "modes", env: "RCM_BENCH_MODES", help: "comma-separated modes (default native,router,rcm)", set: stringOpt(&c.modes)},
		{flag: "thresholds", env: "RCM_BENCH_THRESHOLDS", help: "comma-separated router thresholds for router and rcm, each in (0, 1] (default 0.8)", set: thresholdsOpt(&c.thresholds)},
		{flag: "conditions", env: "RCM_BENCH_CONDITIONS", help: "comma-separated schedules: base, switch (default both)", set: stringOpt(&c.conditions)},
		{flag: "sessions", env: "RCM_BENCH_SESSIONS", help: "comma-separated session ids to run (default all)", set: stringOpt(&c.sessions)},
		{flag: "repeats", env: "RCM_BENCH_REPEATS", help: "runs of each session, condition and arm (default 1)", set: intOpt(&c.repeats)},
		{flag: "harness", env: "RCM_BENCH_HARNESS", help: "the agent to drive: opencode (default), claude-code or codex", set: stringOpt(&c.harness)},
		{flag: "opencode-bin", env: "RCM_OPENCODE_BIN", help: "an opencode binary to use instead of installing OpenCode " + opencode.Version + " from npm", set: stringOpt(&c.opencodeBin)},
		{flag: "claude-bin", env: "RCM_CLAUDE_BIN", help: "a claude binary to use instead of installing Claude Code " + claudecode.Version + " from npm", set: stringOpt(&c.claudeBin)},
		{flag: "codex-bin", env: "RCM_CODEX_BIN", help: "a codex binary to use instead of installing Codex " + codex.Version + " from npm", set: stringOpt(&c.codexBin)},
		{flag: "budget", env: "RCM_BENCH_BUDGET", help: "time per request before a continuation (default 900s)", set: durationOpt(&c.budget)},
		{flag: "continuations", env: "RCM_BENCH_CONTINUATIONS", help: "continuations after a request's budget runs out (default 3; 0 none)", set: intOpt(&c.continuations)},
		{flag: "concurrency", env: "RCM_BENCH_CONCURRENCY", help: "runs at once (default 1)", set: intOpt(&c.concurrency)},
		{flag: "context", env: "RCM_BENCH_CONTEXT", help: "the model's context window in tokens, as the harness budgets (default 128000; for claude-code its --autocompact, for codex its model_context_window, the client's own default when unset)", set: intOpt(&c.context)},
		{flag: "verify-timeout", env: "RCM_BENCH_VERIFY_TIMEOUT", help: "time limit of a test command (default 30m)", set: durationOpt(&c.verifyTimeout)},
		{flag: "db", env: "RCM_BENCH_DB", help: "the proxy's bbolt store (default OUT/rcm.db)", set: stringOpt(&c.db)},
		{flag: "keep", env: "RCM_BENCH_KEEP", help: "keep each run's checkouts under OUT/work: true or false (default false)", set: stringOpt(&c.keep)},
	}
}

const runIntro = `Usage: rcm bench run --spec FILE --upstream URL --model ID --repos DIR [flags]

Drives a real harness (OpenCode through 'opencode serve', Claude Code through 'claude -p', or Codex through 'codex exec') through each session's S_base and S_switch
schedules in each mode, through an in-process rcm proxy pointed at --upstream, scores the focus
task's final patch with its tests, and appends one line per run to OUT/runs.jsonl (a rerun resumes).
The API key comes from RCM_UPSTREAM_KEY. Every flag has an environment twin.`

func benchRun(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := runConfig{out: "bench-run", harness: "opencode", keep: "false", continuations: run.DefaultContinuations}
	if err := parseOptions("bench run", args, runOptions(&c), false, runIntro); err != nil {
		return err
	}
	var missing []string
	for _, f := range [][2]string{{"spec", c.spec}, {"upstream", c.upstream}, {"model", c.model}, {"repos", c.repos}} {
		if f[1] == "" {
			missing = append(missing, "--"+f[0])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("bench run: missing %s\n\n%s", strings.Join(missing, ", "), runIntro)
	}
	if c.harness != "opencode" && c.harness != "claude-code" && c.harness != "codex" {
		return fmt.Errorf("bench run: --harness %q: want opencode, claude-code or codex", c.harness)
	}
	keep, err := strconv.ParseBool(c.keep)
	if err != nil {
		return fmt.Errorf("--keep %q: %w", c.keep, err)
	}
	opts := run.Options{
		Repeats: int(c.repeats), Budget: c.budget, Concurrency: int(c.concurrency), Model: c.model,
		VerifyTimeout: c.verifyTimeout, Keep: keep, Out: c.out, Log: stderr,
		Modes: splitList(strings.ToLower(c.modes)), Conditions: splitList(c.conditions), Sessions: splitList(c.sessions),
		Continuations: int(c.continuations), Thresholds: c.thresholds,
	}
	if c.continuations == 0 {
		opts.Continuations = -1 // none; run.Options reads 0 as the default
	}

	// Everything that can be checked without a model call, cheapest first.
	spec, err := benchspec.Load(c.spec)
	if err != nil {
		return err
	}
	repos := &run.Repos{Dir: c.repos}
	if _, err := repos.Commits(ctx, spec, nil); err != nil {
		return err
	}
	claude := c.harness == "claude-code"
	check := run.CheckUpstream
	if claude {
		check = run.CheckMessagesUpstream
	}
	if err := check(ctx, c.upstream, c.key); err != nil {
		return err
	}
	bin, binFlag := c.opencodeBin, "--opencode-bin"
	if claude {
		bin, binFlag = c.claudeBin, "--claude-bin"
	}
	if c.harness == "codex" {
		bin, binFlag = c.codexBin, "--codex-bin"
	}
	switch {
	case bin == "" && claude:
		fmt.Fprintf(stderr, "installing Claude Code %s from npm (cached after the first time)\n", claudecode.Version)
		if bin, err = claudecode.Install(ctx, ""); err != nil {
			return fmt.Errorf("the harness cannot be installed: %w", err)
		}
	case bin == "" && c.harness == "codex":
		fmt.Fprintf(stderr, "installing Codex %s from npm (cached after the first time)\n", codex.Version)
		if bin, err = codex.Install(ctx, ""); err != nil {
			return fmt.Errorf("the harness cannot be installed: %w", err)
		}
	case bin == "":
		fmt.Fprintf(stderr, "installing OpenCode %s from npm (cached after the first time)\n", opencode.Version)
		if bin, err = opencode.Install(ctx, "", opencode.Version); err != nil {
			return fmt.Errorf("the harness cannot be installed: %w", err)
		}
	default:
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%s: %w", binFlag, err)
		}
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	out, err := filepath.Abs(c.out)
	if err != nil {
		return err
	}
	opts.Out = out

	// The proxy, in-process on loopback, with the meter in front of it.
	db := c.db
	if db == "" {
		db = filepath.Join(out, "rcm.db")
	}
	logf, err := os.OpenFile(filepath.Join(out, "proxy.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	var meter *run.Meter
	pcfg := proxy.Config{Upstream: c.upstream, UpstreamKey: c.key, DB: db, Mode: proxy.Native}
	if claude {
		pcfg = proxy.Config{AnthropicUpstream: c.upstream, UpstreamKey: c.key, DB: db, Mode: proxy.Native}
	}
	proxyURL, stopProxy, err := startProxy(pcfg, logf, slog.LevelInfo,
		func(h http.Handler) http.Handler { meter = run.NewMeter(h); return meter }, stderr)
	if err != nil {
		return err
	}
	defer stopProxy()
	opts.Proxy, opts.Meter, opts.Repos = proxyURL, meter, repos

	harnessDir := filepath.Join(out, "harness")
	switch c.harness {
	case "claude-code":
		opts.Harness = &claudeharness.Harness{Bin: bin, Home: filepath.Join(harnessDir, "homes"), Proxy: opts.Proxy, Model: c.model, Key: c.key, Context: int(c.context)}
	case "codex":
		opts.Harness = &codexharness.Harness{Bin: bin, Home: filepath.Join(harnessDir, "homes"), Proxy: opts.Proxy, Model: c.model, Key: c.key, Context: int(c.context)}
	default:
		oc, err := opencodeharness.New(ctx, opencodeharness.Options{
			Bin: bin, Home: filepath.Join(harnessDir, "home"), Dir: harnessDir, Proxy: opts.Proxy,
			Model: opencode.Model{ID: c.model, Context: int(c.context)}, Arms: opts.Arms(),
		})
		if err != nil {
			return err
		}
		opts.Harness = oc
	}
	defer opts.Harness.Close()

	bar := progress.NewBar(stderr, progress.RunLabels)
	opts.Progress = bar.Update
	st, err := run.Run(ctx, spec, opts)
	bar.Done()
	fmt.Fprintf(stdout, "%d runs: %d done now, %d done before, %d failed\n", st.Total, st.Done, st.Skipped, st.Failed)
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted: %s holds the runs that finished; run the same command again to resume", filepath.Join(out, run.RunsFile))
	}
	if st.Done+st.Skipped > 0 {
		if _, rerr := report.Write(out); rerr != nil {
			err = errors.Join(err, rerr)
		} else {
			fmt.Fprintf(stdout, "wrote %s in %s\n", report.RunReportFile, out)
		}
	}
	return err
}

// benchReport is `rcm bench report DIR`.
func benchReport(args []string, stdout io.Writer) error {
	const usage = "usage: rcm bench report DIR (the --out folder of rcm bench run)"
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprintln(stdout, usage)
		return nil
	}
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return errors.New(usage)
	}
	rep, err := report.Write(args[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d runs over %d sessions\n\n", rep.Runs, rep.Sessions)
	fmt.Fprintf(stdout, "%-8s %9s %10s %10s %8s\n", "mode", "threshold", "Res_unint", "Res_switch", "Gap")
	for _, a := range rep.Arms {
		thr := "-"
		if t := float64(a.Threshold); t == t {
			thr = strconv.FormatFloat(t, 'f', -1, 64)
		}
		fmt.Fprintf(stdout, "%-8s %9s %10.3f %10.3f %8.3f\n", a.Mode, thr, float64(a.ResUnint), float64(a.ResSwitch), float64(a.Gap))
	}
	fmt.Fprintf(stdout, "\nwrote %s, %s, %s and plots in %s\n", report.RunReportFile, report.RunSummaryFile, report.RunSummaryCSV, args[0])
	return nil
}

// benchUpstream is `rcm bench upstream`: the scripted model on a port, for
// dry runs of `rcm bench run` without a real model.
func benchUpstream(args []string, stderr io.Writer) error {
	var script, listen string
	opts := []option{
		{flag: "script", env: "RCM_BENCH_SCRIPT", help: "scripted upstream JSON (internal/scripted docs); required", set: stringOpt(&script)},
		{flag: "listen", env: "RCM_BENCH_LISTEN", help: "address to serve on (default 127.0.0.1:8788)", set: stringOpt(&listen)},
	}
	listen = "127.0.0.1:8788"
	if err := parseOptions("bench upstream", args, opts, false,
		"Usage: rcm bench upstream --script FILE [--listen ADDR]\n\nServes a scripted OpenAI-compatible model at http://ADDR/v1."); err != nil {
		return err
	}
	if script == "" {
		return errors.New("bench upstream: missing --script")
	}
	s, err := scripted.LoadScriptFile(script)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "scripted upstream at http://%s/v1\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := scripted.New(s).Serve(ctx, ln); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
