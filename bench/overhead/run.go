package overhead

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Target is one way to reach the upstream.
type Target struct {
	Name string
	// Base is the API root up to /v1, e.g. http://127.0.0.1:8787/native/v1.
	Base string
}

// Config says what to measure. Zero values take the defaults in brackets.
type Config struct {
	Targets []Target // the first is the reference (direct)
	Sizes   []int    // body sizes of the latency phase [30 KB, 100 KB, 1 MB]
	Agents  int      // concurrent sessions of the latency phase [4]
	Calls   int      // calls per agent per round [10]
	Pause   time.Duration
	// Pause is the wait between an answer and the agent's next call [100 ms].
	Jitter float64
	// Jitter spreads each pause uniformly over Pause ± Jitter×Pause (seeded
	// per agent), so that agents, like real ones, drift apart instead of
	// calling in lock step [0.5; negative: none, every call of every agent
	// collides].
	Conns    int           // connections of the throughput phase [8]
	Duration time.Duration // throughput phase per target and round [2 s]
	RateSize int           // body size of the throughput phase [30 KB]
	Rounds   int           // rounds; figures are medians over rounds [3]
	// Progress, when set, receives one line per phase.
	Progress io.Writer
	// Ended, when set, is called as the latency phases and the throughput
	// phase end ("latency", "throughput"): a caller reads the targets' own
	// counters there.
	Ended func(phase string)
}

func (c *Config) defaults() error {
	if len(c.Targets) == 0 {
		return errors.New("overhead: no targets")
	}
	if len(c.Sizes) == 0 {
		c.Sizes = []int{30 << 10, 100 << 10, 1 << 20}
	}
	set := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	set(&c.Agents, 4)
	set(&c.Calls, 10)
	set(&c.Conns, 8)
	set(&c.RateSize, 30<<10)
	set(&c.Rounds, 3)
	if c.Pause < 0 {
		c.Pause = 0
	} else if c.Pause == 0 {
		c.Pause = 100 * time.Millisecond
	}
	if c.Duration <= 0 {
		c.Duration = 2 * time.Second
	}
	switch {
	case c.Jitter < 0:
		c.Jitter = 0
	case c.Jitter == 0:
		c.Jitter = 0.5
	case c.Jitter > 1:
		return fmt.Errorf("overhead: jitter %g: want at most 1", c.Jitter)
	}
	return nil
}

// Latency is one target's call latencies at one body size.
type Latency struct {
	Target        string
	P50, P90, P99 time.Duration
	Calls, Errors int
}

// Rate is one target's throughput.
type Rate struct {
	Target    string
	PerSecond float64
	Errors    int
}

// Size is the latency phase at one body size.
type Size struct {
	Bytes   int
	Targets []Latency
}

// Result is the whole measurement, with the settings it ran with.
type Result struct {
	Config     Config
	Sizes      []Size
	Throughput []Rate
}

// Run measures every target. It stops early, with what it has, when ctx
// ends.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: max(cfg.Conns, cfg.Agents) * 2}}
	defer client.CloseIdleConnections()
	res := &Result{Config: cfg}
	for _, size := range cfg.Sizes {
		lat := make([][]time.Duration, len(cfg.Targets)) // every call, every round
		errs := make([]int, len(cfg.Targets))
		for round := range cfg.Rounds {
			for i, t := range rotated(cfg.Targets, round) {
				d, e := latencyPhase(ctx, client, cfg, t, size, round)
				lat[i], errs[i] = append(lat[i], d...), errs[i]+e
				cfg.progress("latency %s %s round %d: p50 %s", t.Name, bytesString(size), round+1, percentile(d, 50))
			}
		}
		s := Size{Bytes: size}
		for i, t := range cfg.Targets {
			s.Targets = append(s.Targets, Latency{Target: t.Name, P50: percentile(lat[i], 50),
				P90: percentile(lat[i], 90), P99: percentile(lat[i], 99), Calls: len(lat[i]), Errors: errs[i]})
		}
		res.Sizes = append(res.Sizes, s)
	}
	cfg.ended("latency")
	rates := make([][]float64, len(cfg.Targets))
	errs := make([]int, len(cfg.Targets))
	for round := range cfg.Rounds {
		for i, t := range rotated(cfg.Targets, round) {
			r, e := ratePhase(ctx, client, cfg, t, round)
			rates[i], errs[i] = append(rates[i], r), errs[i]+e
			cfg.progress("throughput %s round %d: %.0f req/s", t.Name, round+1, r)
		}
	}
	for i, t := range cfg.Targets {
		slices.Sort(rates[i])
		res.Throughput = append(res.Throughput, Rate{Target: t.Name, PerSecond: rates[i][len(rates[i])/2], Errors: errs[i]})
	}
	cfg.ended("throughput")
	return res, ctx.Err()
}

func (c *Config) ended(phase string) {
	if c.Ended != nil {
		c.Ended(phase)
	}
}

// rotated visits the targets in an order that starts one later each
// round, so that none always runs first or after the same neighbour (a
// slow spell of the machine, the store another target grew); the index is
// the target's own.
func rotated(ts []Target, round int) func(yield func(int, Target) bool) {
	return func(yield func(int, Target) bool) {
		for k := range ts {
			i := (k + round) % len(ts)
			if !yield(i, ts[i]) {
				return
			}
		}
	}
}

func (c *Config) progress(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format+"\n", args...)
	}
}

// latencyPhase runs cfg.Agents sessions of cfg.Calls calls each against t.
func latencyPhase(ctx context.Context, client *http.Client, cfg Config, t Target, size, round int) ([]time.Duration, int) {
	var (
		mu   sync.Mutex
		all  []time.Duration
		errs int
		wg   sync.WaitGroup
	)
	for a := range cfg.Agents {
		wg.Go(func() {
			s := newSession(size)
			id := fmt.Sprintf("ovh-%s-%d-%d-%d", t.Name, size, round, a)
			// The same pauses for every target: seeded by agent and round.
			rng := rand.New(rand.NewPCG(uint64(a), uint64(round)))
			for range cfg.Calls {
				if ctx.Err() != nil {
					return
				}
				body := s.next()
				start := time.Now()
				err := call(ctx, client, t.Base, id, body)
				d := time.Since(start)
				mu.Lock()
				if err != nil {
					errs++
				} else {
					all = append(all, d)
				}
				mu.Unlock()
				pause := cfg.Pause + time.Duration((2*rng.Float64()-1)*cfg.Jitter*float64(cfg.Pause))
				select {
				case <-ctx.Done():
				case <-time.After(pause):
				}
			}
		})
	}
	wg.Wait()
	return all, errs
}

// ratePhase sends calls back to back on cfg.Conns connections for
// cfg.Duration and returns the completed calls per second.
// rateSessions is how many sessions each connection of the throughput
// phase takes turns among.
const rateSessions = 16

func ratePhase(ctx context.Context, client *http.Client, cfg Config, t Target, round int) (float64, int) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var done, errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := range cfg.Conns {
		wg.Go(func() {
			body := newSession(cfg.RateSize).next()
			// Each connection takes turns among rateSessions sessions: one
			// session called back to back would outrun its own writes,
			// which commit in order, one per commit of the store.
			for k := 0; ctx.Err() == nil; k++ {
				id := fmt.Sprintf("ovh-rate-%s-%d-%d-%d", t.Name, round, c, k%rateSessions)
				if err := call(ctx, client, t.Base, id, body); err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
					}
					continue
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), int(errs.Load())
}

// call sends one chat-completions call and reads the whole answer.
func call(ctx context.Context, client *http.Client, base, session string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", session)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("overhead: %s answered %s", base, resp.Status)
	}
	return nil
}

// percentile returns the p-th percentile of ds (nearest rank); 0 for none.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s) + 99) / 100
	return s[max(i-1, 0)]
}
