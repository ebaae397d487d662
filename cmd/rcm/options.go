package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rcm-dev/rcm/proxy"
)

// option is a setting with a flag and an environment twin. Values are
// applied in order of precedence: config file, then environment, then the
// command line.
type option struct {
	flag, env, help string
	set             func(string) error
	secret          bool // never read from a config file
}

func stringOpt(p *string) func(string) error {
	return func(s string) error { *p = s; return nil }
}

func boolOpt(p *bool) func(string) error {
	return func(s string) (err error) { *p, err = strconv.ParseBool(s); return err }
}

func floatOpt(p *float64) func(string) error {
	return func(s string) (err error) { *p, err = strconv.ParseFloat(s, 64); return err }
}

// thresholdOpt reads a router threshold (proxy.ParseThreshold: 0 is
// refused, not taken for the default).
func thresholdOpt(p *float64) func(string) error {
	return func(s string) (err error) { *p, err = proxy.ParseThreshold(s); return err }
}

// thresholdsOpt reads a comma-separated list of router thresholds.
func thresholdsOpt(p *[]float64) func(string) error {
	return func(s string) error {
		var ts []float64
		for v := range strings.SplitSeq(s, ",") {
			t, err := proxy.ParseThreshold(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%q: %w", v, err)
			}
			ts = append(ts, t)
		}
		*p = ts
		return nil
	}
}

func intOpt[T int | int64](p *T) func(string) error {
	return func(s string) error {
		n, err := strconv.ParseInt(s, 10, 64)
		*p = T(n)
		return err
	}
}

func durationOpt(p *time.Duration) func(string) error {
	return func(s string) (err error) { *p, err = time.ParseDuration(s); return err }
}

// daysOpt is durationOpt that also takes days ("30d", "1.5d").
func daysOpt(p *time.Duration) func(string) error {
	return func(s string) error {
		if n, ok := strings.CutSuffix(s, "d"); ok {
			d, err := strconv.ParseFloat(n, 64)
			if err != nil || d < 0 || d > 1e5 {
				return fmt.Errorf("want a duration such as 30d or 12h")
			}
			*p = time.Duration(d * float64(24*time.Hour))
			return nil
		}
		return durationOpt(p)(s)
	}
}

// sizeUnits are the suffixes sizeOpt accepts, longest first.
var sizeUnits = []struct {
	suffix string
	n      float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1},
}

// sizeOpt parses a byte size: a number with an optional unit (512MiB,
// 2GB, 1G, 1048576).
func sizeOpt(p *int64) func(string) error {
	return func(s string) error {
		num, mul := strings.TrimSpace(s), 1.0
		for _, u := range sizeUnits {
			if n, ok := strings.CutSuffix(num, u.suffix); ok {
				num, mul = strings.TrimSpace(n), u.n
				break
			}
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || v < 0 || v*mul > 1<<62 {
			return fmt.Errorf("want a size such as 512MiB, 2GB or a number of bytes")
		}
		*p = int64(v * mul)
		return nil
	}
}

// parseOptions parses args against opts. With withConfig, a --config flag
// (env RCM_CONFIG) names a JSON object whose keys are the flags' names
// (dashes or underscores) and whose values are applied first.
func parseOptions(name string, args []string, opts []option, withConfig bool, intro string) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	raw := map[string]*string{}
	for _, o := range opts {
		raw[o.flag] = fs.String(o.flag, "", fmt.Sprintf("%s (env %s)", o.help, o.env))
	}
	var cfgPath *string
	if withConfig {
		cfgPath = fs.String("config", os.Getenv("RCM_CONFIG"), "JSON config file with the same keys as the flags, underscores for dashes; flags and environment win (env RCM_CONFIG)")
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\nFlags:\n", intro)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", name, fs.Args())
	}
	if cfgPath != nil && *cfgPath != "" {
		b, err := os.ReadFile(*cfgPath)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		if err := applyConfig(b, opts); err != nil {
			return fmt.Errorf("config %s: %w", *cfgPath, err)
		}
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	for _, o := range opts {
		v, from := "", ""
		if e, ok := os.LookupEnv(o.env); ok && e != "" {
			v, from = e, o.env
		}
		if explicit[o.flag] {
			v, from = *raw[o.flag], "--"+o.flag
		}
		if from == "" {
			continue
		}
		if err := o.set(v); err != nil {
			return fmt.Errorf("%s %q: %w", from, v, err)
		}
	}
	return nil
}

func applyConfig(b []byte, opts []option) error {
	var file map[string]json.RawMessage
	if err := json.Unmarshal(b, &file); err != nil {
		return err
	}
	byName := map[string]option{}
	for _, o := range opts {
		byName[o.flag] = o
	}
	for key, raw := range file {
		o, ok := byName[strings.ReplaceAll(key, "_", "-")]
		switch {
		case !ok:
			return fmt.Errorf("unknown key %q", key)
		case o.secret:
			return fmt.Errorf("key %q: secrets are read from the environment (%s), not from files", key, o.env)
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			v = string(raw) // numbers and booleans as written
		}
		if err := o.set(v); err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
	}
	return nil
}
