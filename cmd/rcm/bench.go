package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/rcm-dev/rcm/bench/chatlog"
	"github.com/rcm-dev/rcm/bench/progress"
	benchreplay "github.com/rcm-dev/rcm/bench/replay"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/bench/trajectory"
	"github.com/rcm-dev/rcm/internal/scripted"
	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/proxy"
)

// benchCommands lists the bench's subcommands, for rcm --help and rcm
// bench --help alike.
const benchCommands = `  rcm bench replay [flags]   replay sessions through the proxy against a scripted upstream
  rcm bench run [flags]      drive a real harness through the schedules and score the patches
  rcm bench report DIR       Res_unint, Res_switch, Gap and costs of a bench run's results
  rcm bench upstream [flags] serve a scripted model (dry runs of bench run)
  rcm bench spec [flags]     write a bench spec: the demo pack's, or one built from --data
  rcm bench proxy [flags]    the proxy's overhead side by side: direct, Caddy, native, router, rcm
  rcm bench floor KIND       serve a floor rcm bench proxy measures against (relay or bare)
  rcm bench fit [flags]      fit the router's scored model on labelled sessions (router/coef_gen.go)
`

const benchUsage = "Usage:\n" + benchCommands + "\nEach subcommand's --help lists its flags.\n"

func bench(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("bench: missing subcommand\n\n%s", benchUsage)
	}
	if isHelp(args[0]) {
		fmt.Print(benchUsage)
		return nil
	}
	switch args[0] {
	case "replay":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return benchReplay(ctx, args[1:], os.Stdout, os.Stderr)
	case "run":
		return benchRun(args[1:], os.Stdout, os.Stderr)
	case "report":
		return benchReport(args[1:], os.Stdout)
	case "upstream":
		return benchUpstream(args[1:], os.Stderr)
	case "spec":
		return benchSpec(args[1:], os.Stdout, os.Stderr)
	case "floor":
		return benchFloor(args[1:])
	case "fit":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return benchFit(ctx, args[1:], os.Stdout, os.Stderr)
	case "proxy":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return benchProxy(ctx, args[1:], os.Stdout, os.Stderr)
	default:
		return fmt.Errorf("bench: unknown subcommand %q\n\n%s", args[0], benchUsage)
	}
}

// replayConfig is what `rcm bench replay` is told.
type replayConfig struct {
	spec, data, format string
	sessions           string
	seed               int64
	modes              string
	thresholds         []float64
	out, db            string
	concurrency        int64
	overhead           string
	compactionTail     int64
	api                string
	cachePrice         float64
	layout             string
	returns            string
	tags               string
	routerModel        string
}

func replayOptions(c *replayConfig) []option {
	return []option{
		{flag: "spec", env: "RCM_BENCH_SPEC", help: "bench spec file (bench/SPEC.md); default: the embedded demo pack", set: stringOpt(&c.spec)},
		{flag: "sessions", env: "RCM_BENCH_SESSIONS", help: "replay real session logs instead of bench sessions: an aider .aider.chat.history.md, a SpecStory .specstory/history folder, Claude Code's ~/.claude/projects (or one project or .jsonl), Codex's ~/.codex/sessions, or a corpus folder of raw/ and labels/; labelled sessions are measured, every session is audited", set: stringOpt(&c.sessions)},
		{flag: "data", env: "RCM_BENCH_DATA", help: "build sessions from every task of a data folder laid out as shared/data (instead of --spec)", set: stringOpt(&c.data)},
		{flag: "format", env: "RCM_BENCH_FORMAT", help: "trajectory format under --data: mini-swe-agent or openhands (default mini-swe-agent)", set: stringOpt(&c.format)},
		{flag: "seed", env: "RCM_BENCH_SEED", help: "assembly seed for --data (default 1)", set: intOpt(&c.seed)},
		{flag: "modes", env: "RCM_BENCH_MODES", help: "comma-separated modes (default native,router,rcm)", set: stringOpt(&c.modes)},
		{flag: "thresholds", env: "RCM_BENCH_THRESHOLDS", help: "comma-separated router thresholds, each in (0, 1] (default 0.5,0.7,0.8,0.9,1.0)", set: thresholdsOpt(&c.thresholds)},
		{flag: "out", env: "RCM_BENCH_OUT", help: "folder for results.json, report.md and plots (default ./bench-out)", set: stringOpt(&c.out)},
		{flag: "db", env: "RCM_BENCH_DB", help: "the proxy's bbolt store (default: a temporary file, removed after)", set: stringOpt(&c.db)},
		{flag: "concurrency", env: "RCM_BENCH_CONCURRENCY", help: "units (session, mode, threshold) replayed at once (default: number of CPUs)", set: intOpt(&c.concurrency)},
		{flag: "overhead", env: "RCM_BENCH_OVERHEAD", help: "measure the proxy's overhead with a direct call per call: true or false (default true)", set: stringOpt(&c.overhead)},
		{flag: "api", env: "RCM_BENCH_API", help: "what the calls speak: chat (/v1/chat/completions, default), messages (Anthropic's /v1/messages) or responses (OpenAI's /v1/responses)", set: stringOpt(&c.api)},
		{flag: "cache-price", env: "RCM_BENCH_CACHE_PRICE", help: "price of a cached input token relative to an uncached one, in the cost with prompt caching (default 0.1)", set: floatOpt(&c.cachePrice)},
		{flag: "layout", env: "RCM_BENCH_LAYOUT", help: "checkouts of a session: checkout (one per task, named in its requests) or shared (every task in one checkout, requests name tasks by issue title) (default checkout)", set: stringOpt(&c.layout)},
		{flag: "returns", env: "RCM_BENCH_RETURNS", help: "how the shared layout's returning requests name their task: title (quote the issue's title) or untitled (\"that issue\") (default title)", set: stringOpt(&c.returns)},
		{flag: "tags", env: "RCM_BENCH_TAGS", help: "with labelled --sessions, replay them as if the person had named tasks with [task: ...]: new (each new task that needs no earlier one), return (each return), or new,return (default: as written)", set: stringOpt(&c.tags)},
		{flag: "router-model", env: "RCM_BENCH_ROUTER_MODEL", help: "give the proxy's router this model classifier, answered by the scripted upstream (it abstains), and report its calls, tokens and time (default: none)", set: stringOpt(&c.routerModel)},
		{flag: "compaction-tail", env: "RCM_BENCH_COMPACTION_TAIL", help: "tokens of recent history the harness keeps out of the compaction call ending each switch session (default 15000, OpenCode's; negative: none)", set: intOpt(&c.compactionTail)},
	}
}

func benchReplay(ctx context.Context, args []string, stdout, stderr *os.File) error {
	c := replayConfig{format: benchspec.FormatMiniSWE, seed: 1, out: "bench-out", overhead: "true"}
	if err := parseOptions("bench replay", args, replayOptions(&c), false,
		"Usage: rcm bench replay [flags]\n\nReplays bench sessions through an in-process proxy against a scripted upstream and writes\nresults.json and report.md. With no flags it runs the embedded demo pack; with --sessions, real\nsession logs (measured when labelled, audited either way). Every flag has an environment twin."); err != nil {
		return err
	}
	var spec *benchspec.Spec
	var logs []chatlog.Session
	var skips []trajectory.Skip
	var err error
	if c.sessions != "" {
		if c.spec != "" || c.data != "" || c.layout != "" || c.returns != "" {
			return errors.New("--sessions replays real sessions: give it without --spec, --data, --layout or --returns")
		}
		if logs, skips, err = chatlog.Read(c.sessions); err != nil {
			return err
		}
		for _, sk := range skips {
			fmt.Fprintf(stderr, "left out or repaired: %s\n", sk)
		}
		if err := tagLogs(logs, c.tags, stderr); err != nil {
			return err
		}
	} else if c.tags != "" {
		return errors.New("--tags names the tasks of labelled --sessions: give it with --sessions")
	} else if spec, err = loadSpec(&c, stderr); err != nil {
		return err
	}
	if c.layout != "" {
		spec.Layout = c.layout
		if err := spec.Validate(); err != nil {
			return fmt.Errorf("--layout: %w", err)
		}
	}
	if c.returns != "" {
		spec.Returns = c.returns
		if err := spec.Validate(); err != nil {
			return fmt.Errorf("--returns: %w", err)
		}
	}
	opts := benchreplay.Options{Concurrency: int(c.concurrency), CompactionTail: int(c.compactionTail), API: c.api, CachePrice: c.cachePrice}
	if c.modes != "" {
		for m := range strings.SplitSeq(c.modes, ",") {
			opts.Modes = append(opts.Modes, strings.ToLower(strings.TrimSpace(m)))
		}
	}
	opts.Thresholds = c.thresholds
	overhead, err := strconv.ParseBool(c.overhead)
	if err != nil {
		return fmt.Errorf("--overhead %q: %w", c.overhead, err)
	}

	// The scripted upstream and the proxy, each on its own loopback port,
	// live as long as the replay.
	up := scripted.New(scripted.Script{Models: []string{"bench"}, Rules: []scripted.Rule{benchreplay.ClassifierRule}})
	upURL, stopUp, err := startScripted(up)
	if err != nil {
		return err
	}
	defer stopUp()

	db := c.db
	if db == "" {
		tmp, err := os.MkdirTemp("", "rcm-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		db = filepath.Join(tmp, "rcm.db")
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(c.out, "proxy.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cfg := proxy.Config{Upstream: upURL, AnthropicUpstream: strings.TrimSuffix(upURL, "/v1"), DB: db, Mode: proxy.Native}
	if c.routerModel != "" {
		cfg.RouterModel, cfg.RouterBaseURL = c.routerModel, upURL
	}
	proxyURL, stopProxy, err := startProxy(cfg, logf, slog.LevelWarn, nil, stderr)
	if err != nil {
		return err
	}
	defer stopProxy()

	opts.Proxy = proxyURL
	opts.Render = renderRecord
	opts.Upstream = up
	if overhead {
		opts.Direct = upURL
	}
	bar := progress.NewBar(stderr, progress.ReplayLabels)
	opts.Progress = bar.Update
	if logs != nil {
		return replayLogs(ctx, logs, skips, opts, bar, c.out, stdout, stderr)
	}
	fmt.Fprintf(stderr, "replaying %d sessions of %s (%d tasks)\n", len(spec.Sessions), spec.Name, len(spec.Tasks))
	res, err := benchreplay.Replay(ctx, spec, opts)
	bar.Done()
	if res == nil {
		return err
	}
	if werr := res.Write(c.out); werr != nil {
		return errors.Join(err, werr)
	}
	if c.spec == "" && c.data == "" {
		// Results of the demo pack carry its sources and licences.
		if werr := os.WriteFile(filepath.Join(c.out, "ATTRIBUTION.txt"), []byte(benchspec.DemoAttribution()), 0o644); werr != nil {
			return errors.Join(err, werr)
		}
	}
	res.WriteTable(stdout)
	fmt.Fprintf(stdout, "\nwrote %s and %s in %s\n", benchreplay.ResultsFile, benchreplay.ReportFile, c.out)
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted: results cover the %d of %d sessions that finished", res.Completed, res.Sessions)
	}
	return err
}

// tagLogs writes the tags of --tags into the labelled sessions.
func tagLogs(logs []chatlog.Session, tags string, stderr io.Writer) error {
	if tags == "" {
		return nil
	}
	kinds := strings.Split(tags, ",")
	for _, k := range kinds {
		if k != chatlog.KindNew && k != chatlog.KindReturn {
			return fmt.Errorf("--tags: %q is neither new nor return", k)
		}
	}
	n := 0
	for i := range logs {
		n += logs[i].Tag(kinds...)
	}
	fmt.Fprintf(stderr, "tagged %d requests (%s) as a person naming their tasks would\n", n, tags)
	return nil
}

// replayLogs replays real sessions and writes their results into out.
func replayLogs(ctx context.Context, logs []chatlog.Session, skips []trajectory.Skip, opts benchreplay.Options, bar *progress.Bar, out string, stdout, stderr io.Writer) error {
	labelled := 0
	for _, s := range logs {
		if s.Labels != nil {
			labelled++
		}
	}
	fmt.Fprintf(stderr, "replaying %d real sessions (%d labelled)\n", len(logs), labelled)
	res, err := benchreplay.Logs(ctx, logs, opts)
	bar.Done()
	if res == nil {
		return err
	}
	res.Skipped = skips
	if werr := res.Write(out); werr != nil {
		return errors.Join(err, werr)
	}
	res.WriteTable(stdout)
	fmt.Fprintf(stdout, "\nwrote %s and %s (with the audit of every request) in %s\n", benchreplay.ResultsFile, benchreplay.ReportFile, out)
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted: results cover the %d of %d sessions that finished", res.Completed, res.Sessions)
	}
	return err
}

// renderRecord renders a task record of the inspector's session view, as
// rcm injects it (unbounded by --memory-tokens).
func renderRecord(raw json.RawMessage) (string, error) {
	var r memory.Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", err
	}
	return memory.Render(r, 0), nil
}

// loadSpec reads --spec, builds one from --data, or returns the demo pack.
func loadSpec(c *replayConfig, log io.Writer) (*benchspec.Spec, error) {
	switch {
	case c.spec != "" && c.data != "":
		return nil, errors.New("give --spec or --data, not both")
	case c.spec != "":
		return benchspec.Load(c.spec)
	case c.data != "":
		if c.seed < 0 {
			return nil, fmt.Errorf("--seed %d: want a non-negative number", c.seed)
		}
		tasks, skips, err := benchspec.ReadData(c.data, c.format)
		if err != nil {
			return nil, err
		}
		spec, more, err := benchspec.NewSpec(filepath.Base(filepath.Clean(c.data)), tasks, uint64(c.seed))
		for _, s := range append(skips, more...) {
			fmt.Fprintf(log, "note: %s\n", s)
		}
		if err != nil {
			return nil, err
		}
		if len(spec.Sessions) == 0 {
			return nil, fmt.Errorf("%s: no session could be assembled from %d tasks", c.data, len(tasks))
		}
		return spec, nil
	}
	return benchspec.Demo()
}
