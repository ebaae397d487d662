package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/rcm-dev/rcm/bench/chatlog"
	"github.com/rcm-dev/rcm/bench/fit"
	benchreplay "github.com/rcm-dev/rcm/bench/replay"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/internal/scripted"
	"github.com/rcm-dev/rcm/proxy"
	"github.com/rcm-dev/rcm/router"
)

// fitCommand is how router/coef_gen.go names the command that made it.
const fitCommand = "go run ./cmd/rcm bench fit"

type fitConfig struct {
	sessions, data, out, report, audit string
	folds                              int64
	lambda, synthetic                  float64
}

// benchFit fits the router's scored model on labelled real sessions and the
// bench's synthetic ones, cross-validates it by repository, writes the
// generated coefficients and the report.
func benchFit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	d := fit.Defaults()
	c := fitConfig{sessions: "testdata/real-sessions", data: "../shared/data", out: "router/coef_gen.go", report: "docs/router-fit.md",
		folds: int64(d.Folds), lambda: d.Lambda, synthetic: d.Synthetic}
	opts := []option{
		{flag: "sessions", env: "RCM_FIT_SESSIONS", help: "comma-separated folders of labelled real sessions (raw/ and labels/; default testdata/real-sessions)", set: stringOpt(&c.sessions)},
		{flag: "data", env: "RCM_FIT_DATA", help: "shared data folder whose trajectories make the bench's synthetic sessions (default ../shared/data; \"\" for none)", set: stringOpt(&c.data)},
		{flag: "out", env: "RCM_FIT_OUT", help: "the generated coefficients (default router/coef_gen.go; \"\" to write none)", set: stringOpt(&c.out)},
		{flag: "report", env: "RCM_FIT_REPORT", help: "the fit's report, markdown (default docs/router-fit.md; \"\" for stdout only)", set: stringOpt(&c.report)},
		{flag: "audit", env: "RCM_FIT_AUDIT", help: "folder for the held-out replay through the proxy: results.json and report.md, with every request's decisions (default \"\": none)", set: stringOpt(&c.audit)},
		{flag: "folds", env: "RCM_FIT_FOLDS", help: fmt.Sprintf("cross-validation folds, whole repositories each (default %d)", d.Folds), set: intOpt(&c.folds)},
		{flag: "lambda", env: "RCM_FIT_LAMBDA", help: fmt.Sprintf("L2 penalty of the logistic heads (default %g)", d.Lambda), set: floatOpt(&c.lambda)},
		{flag: "synthetic-weight", env: "RCM_FIT_SYNTHETIC_WEIGHT", help: fmt.Sprintf("share of each head's row weight the synthetic sessions carry (default %g)", d.Synthetic), set: floatOpt(&c.synthetic)},
	}
	if err := parseOptions("bench fit", args, opts, false, "Usage: rcm bench fit [flags]\n\nFits the router's scored model (router/coef_gen.go) and reports it, cross-validated by repository."); err != nil {
		return err
	}
	if !(c.lambda > 0) || c.folds < 2 {
		return fmt.Errorf("bench fit: --lambda %v, --folds %d: want a positive penalty and at least 2 folds", c.lambda, c.folds)
	}
	var all []*fit.Session
	var logs []chatlog.Session // the real sessions' logs, as all holds them
	for _, dir := range strings.Split(c.sessions, ",") {
		if dir = strings.TrimSpace(dir); dir == "" {
			continue
		}
		ls, skips, err := chatlog.Read(dir)
		if err != nil {
			return err
		}
		if len(skips) > 0 {
			// A fit on what happened to parse would be another corpus's.
			return fmt.Errorf("bench fit: %s: %d logs or lines could not be read as labelled, first %s", dir, len(skips), skips[0])
		}
		ss, err := fit.Real(ls)
		if err != nil {
			return err
		}
		all = append(all, ss...)
		logs = append(logs, ls...)
	}
	if c.data != "" {
		ss, err := synthetic(c.data)
		if err != nil {
			return err
		}
		all = append(all, ss...)
	}
	if len(all) == 0 {
		return fmt.Errorf("bench fit: no sessions")
	}
	if !(c.synthetic > 0 && c.synthetic < 1) {
		return fmt.Errorf("bench fit: --synthetic-weight %v: want a share in (0, 1) (--data \"\" fits on real sessions alone)", c.synthetic)
	}
	o := fit.Options{Folds: int(c.folds), Lambda: c.lambda, Synthetic: c.synthetic}
	fmt.Fprintf(stderr, "fitting on %d sessions\n", len(all))
	coef, err := fit.Fit(ctx, all, o)
	if err != nil {
		return err
	}
	if c.out != "" {
		src, err := fit.Generate(coef, fitCommand)
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.out, src, 0o644); err != nil {
			return err
		}
	}
	thresholds := []float64{0.7, 0.8, 0.9}
	fmt.Fprintln(stderr, "cross-validating")
	held, folds, err := fit.CrossValidate(ctx, all, o, thresholds)
	if err != nil {
		return err
	}
	in, err := fit.Measure(ctx, all, coef, thresholds)
	if err != nil {
		return err
	}
	var b strings.Builder
	fit.Report(&b, all, in, held, thresholds, o)
	if len(logs) > 0 {
		fmt.Fprintln(stderr, "replaying the real sessions held out through the proxy")
		res, err := heldOut(ctx, logs, all[:len(logs)], folds)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "\n## Through the proxy, held out, router and rcm mode\n\n"+
			"Each real session replayed (`rcm bench replay --sessions`, OpenCode's chat wire format) through an rcm whose router was fitted without its fold, at %.2g; rcm mode's forwarded messages include its record and the brief of the other tasks.\n\n", router.DefaultThreshold)
		res.WriteMetrics(&b)
		if c.audit != "" {
			if err := res.Write(c.audit); err != nil {
				return err
			}
		}
	}
	if c.report != "" {
		if err := os.WriteFile(c.report, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

// synthetic lays out the bench's sessions of a shared data folder in the
// shared layout, with returns that quote their issue's title and with
// returns that do not: the layouts where words decide (in the checkout
// layout each task's checkout does).
func synthetic(data string) ([]*fit.Session, error) {
	tasks, _, err := benchspec.ReadData(data, benchspec.FormatMiniSWE)
	if err != nil {
		return nil, err
	}
	var out []*fit.Session
	for _, returns := range []string{benchspec.ReturnsTitle, benchspec.ReturnsUntitled} {
		spec, _, err := benchspec.NewSpec("fit", tasks, 1)
		if err != nil {
			return nil, err
		}
		spec.Layout, spec.Returns = benchspec.LayoutShared, returns
		ss, err := fit.Synthetic(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, ss...)
	}
	return out, nil
}

// heldOut replays the real sessions logs (fitted as real, in order) in
// router and rcm mode, each through an in-process proxy whose router has
// the coefficients of the fold that holds it out.
func heldOut(ctx context.Context, logs []chatlog.Session, real []*fit.Session, folds []fit.Fold) (*benchreplay.LogResults, error) {
	up := scripted.New(scripted.Script{Models: []string{"bench"}})
	upURL, stopUp, err := startScripted(up)
	if err != nil {
		return nil, err
	}
	defer stopUp()
	tmp, err := os.MkdirTemp("", "rcm-fit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	index := make(map[*fit.Session]int, len(real))
	for i, s := range real {
		index[s] = i
	}
	proxies := make([]string, len(logs))
	for k, f := range folds {
		cfg := proxy.Config{Upstream: upURL, DB: filepath.Join(tmp, fmt.Sprintf("fold%d.db", k)), Mode: proxy.Native, RouterCoefficients: f.Coef}
		u, stopProxy, err := startProxy(cfg, io.Discard, slog.LevelWarn, nil, io.Discard)
		if err != nil {
			return nil, err
		}
		defer stopProxy()
		for _, s := range f.Held {
			if i, ok := index[s]; ok {
				proxies[i] = u
			}
		}
	}
	res, err := benchreplay.Logs(ctx, logs, benchreplay.Options{Proxy: proxies[0], Proxies: proxies, Upstream: up,
		Modes: []string{benchspec.ModeRouter, benchspec.ModeRCM}, Thresholds: []float64{router.DefaultThreshold}})
	if err != nil {
		return nil, err
	}
	if res.Completed != len(logs) {
		return nil, fmt.Errorf("bench fit: %d of %d held-out sessions replayed", res.Completed, len(logs))
	}
	return res, nil
}
