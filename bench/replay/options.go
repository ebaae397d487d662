package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"

	"github.com/rcm-dev/rcm/bench/progress"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/internal/scripted"
)

// Options configure a replay. Zero values take the documented defaults.
type Options struct {
	// Proxy is the base URL of the running proxy (http://127.0.0.1:8787);
	// calls go to Proxy + "/v1/chat/completions" (or "/v1/messages", see
	// API). Required.
	Proxy string
	// Proxies, when set, give each of Logs' sessions (by index) the proxy
	// that replays it instead of Proxy: a held-out measure replays each
	// session through a router fitted without it.
	Proxies []string
	// Upstream is the scripted model the proxy forwards to: the driver
	// queues the recorded reply before each call and takes what the
	// upstream received after it. Required.
	Upstream *scripted.Server
	// Direct, when set, is the upstream's own base URL (".../v1"): the
	// forwarded body of every fourth call is sent there too, and the
	// proxy's overhead is the round trip through the proxy minus this
	// direct one. Empty: overhead is not measured.
	Direct string
	// Modes to run. Default native, router, rcm.
	Modes []string
	// Thresholds to run router and rcm at (X-RCM-Threshold). Native does
	// not depend on it: it runs once per session and is reported in every
	// threshold's row. Default 0.5, 0.7, 0.8, 0.9, 1.0.
	Thresholds []float64
	// Concurrency is how many (session, mode, threshold) units run at once.
	// Default 4 x GOMAXPROCS: a unit's calls are sequential and wait on the
	// proxy's store, so more units than cores keep the cores busy.
	Concurrency int
	// Model is the body's "model". Default "bench".
	Model string
	// CompactionTail is the recent tail, in tokens, that the harness keeps
	// verbatim and leaves out of the compaction call ending each S_switch
	// replay (see CompactionBody). Default DefaultCompactionTail, OpenCode
	// 1.18.33's; negative: none, the whole conversation is summarised.
	CompactionTail int
	// CachePrice is what a cached input token costs relative to an
	// uncached one, in the prompt-cache cost (see Cost). Default
	// DefaultCachePrice.
	CachePrice float64
	// Client sends the calls. Default: a client with its own transport.
	Client *http.Client
	// Progress, when set, is told of every finished call and unit.
	Progress func(progress.Progress)
	// API is what the calls speak: APIChat (default), APIMessages (the
	// same histories as Anthropic Messages bodies sent to /v1/messages) or
	// APIResponses (as OpenAI Responses input items sent to /v1/responses).
	API string
	// Render renders a task record as the proxy's inspector serves it
	// (memory.Record's JSON) into the text rcm injects. When set, rcm
	// mode reads the focus task's record after each focus turn of S_switch
	// (record_bytes); nil: record sizes are not measured.
	Render func(record json.RawMessage) (string, error)
}

// DefaultThresholds is what Options' zero Thresholds mean.
var DefaultThresholds = []float64{0.5, 0.7, 0.8, 0.9, 1.0}

func (o *Options) validate() error {
	if o.Proxy == "" {
		return errors.New("bench: replay: no proxy URL")
	}
	if o.Upstream == nil {
		return errors.New("bench: replay: no scripted upstream")
	}
	if len(o.Modes) == 0 {
		o.Modes = benchspec.DefaultModes
	}
	for _, m := range o.Modes {
		if m != benchspec.ModeNative && m != benchspec.ModeRouter && m != benchspec.ModeRCM {
			return fmt.Errorf("bench: replay: mode %q: want native, router or rcm", m)
		}
	}
	if len(o.Thresholds) == 0 {
		o.Thresholds = DefaultThresholds
	}
	for _, t := range o.Thresholds {
		if !(t >= 0 && t <= 1) {
			return fmt.Errorf("bench: replay: threshold %v: want a number in [0, 1]", t)
		}
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4 * runtime.GOMAXPROCS(0)
	}
	if o.Model == "" {
		o.Model = "bench"
	}
	switch o.API {
	case "":
		o.API = APIChat
	case APIChat, APIMessages, APIResponses:
	default:
		return fmt.Errorf("bench: replay: api %q: want chat, messages or responses", o.API)
	}
	if o.CachePrice == 0 {
		o.CachePrice = DefaultCachePrice
	}
	if !(o.CachePrice >= 0 && o.CachePrice <= 1) {
		return fmt.Errorf("bench: replay: cache price %v: want a number in [0, 1]", o.CachePrice)
	}
	if o.CompactionTail == 0 {
		o.CompactionTail = DefaultCompactionTail
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	}
	o.Proxy = strings.TrimRight(o.Proxy, "/")
	for i, p := range o.Proxies {
		o.Proxies[i] = strings.TrimRight(p, "/")
	}
	o.Direct = strings.TrimRight(o.Direct, "/")
	return nil
}

// member is the body's member that holds the history.
func (o *Options) member() string {
	if o.API == APIResponses {
		return "input"
	}
	return "messages"
}

// path is the endpoint a replay's calls go to, below the proxy's root.
func (o *Options) path() string {
	switch o.API {
	case APIMessages:
		return "/v1/messages"
	case APIResponses:
		return "/v1/responses"
	}
	return "/v1/chat/completions"
}

// proxyOf is the proxy that replays session (an index into Logs' sessions).
func (o *Options) proxyOf(session int) string {
	if session < len(o.Proxies) && o.Proxies[session] != "" {
		return o.Proxies[session]
	}
	return o.Proxy
}
