package proxy

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/rcm-dev/rcm/internal/str"
	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/router"
)

// Mode selects what rcm does to a request.
type Mode string

// The three modes of DESIGN.md.
const (
	Native Mode = "native" // forward unchanged (the baseline)
	Router Mode = "router" // route the history, no memory (+Router)
	RCM    Mode = "rcm"    // route, inject task records, task-aware compaction (+RCM)
)

// parseMode accepts a mode name, case-insensitively.
func parseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case Native, Router, RCM:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q (want native, router or rcm)", s)
}

// Config is everything `rcm serve` needs. The zero value of each field means
// its documented default; Defaults fills the defaults in.
type Config struct {
	// Listen is the address to serve on. Default 127.0.0.1:8787.
	Listen string `json:"listen"`
	// Upstream is the base URL of the model API, ending before the
	// endpoint (".../v1"). Default https://api.openai.com/v1.
	Upstream string `json:"upstream"`
	// AnthropicUpstream is the base URL of the Anthropic API, without /v1
	// (as ANTHROPIC_BASE_URL): /v1/messages and its sub-routes go there.
	// Default https://api.anthropic.com.
	AnthropicUpstream string `json:"anthropic_upstream"`
	// UpstreamKey is sent as the credential when the client sends none.
	// Secrets come only from the environment (RCM_UPSTREAM_KEY) or flags,
	// never from a config file.
	UpstreamKey string `json:"-"`
	// AuthToken guards rcm (see README "Security"): /rcm/... needs it, and
	// so do proxied calls when UpstreamKey is set. Required when Listen
	// reaches beyond loopback; at least 16 characters (minAuthToken). Secret:
	// environment (RCM_AUTH_TOKEN) or flag, never a config file.
	AuthToken string `json:"-"`
	// Mode is used when a request names none. Default rcm.
	Mode Mode `json:"mode"`
	// Threshold is the router confidence below which the full history is
	// kept, in (0, 1]; 0 means unset, DefaultThreshold (rcm serve refuses
	// --threshold 0: see ParseThreshold). A request may override it with
	// X-RCM-Threshold.
	Threshold float64 `json:"threshold"`
	// DB is the bbolt store file. Default: memory.DefaultPath(), a file
	// under the user's data directory.
	DB string `json:"db"`
	// Store, when set, is the PostgreSQL database that replicas share
	// (postgres://user@host/db; the libpq PG* variables fill what it
	// leaves out), used instead of DB. Keep its password out of a config
	// file: PGPASSWORD or ~/.pgpass.
	Store string `json:"store"`
	// MaxBody caps request bodies; larger ones get 413. Default 32 MiB.
	MaxBody int64 `json:"max_body"`
	// HeaderTimeout bounds the wait for the upstream's response headers;
	// past it the client gets 504. Default 10 minutes (models can think
	// long before the first byte).
	HeaderTimeout time.Duration `json:"header_timeout"`
	// DialTimeout bounds connecting to the upstream. Default 10 s.
	DialTimeout time.Duration `json:"dial_timeout"`
	// ReadHeaderTimeout bounds the wait for a client's request headers (a
	// slow client holds no connection past it). Default 30 s.
	ReadHeaderTimeout time.Duration `json:"read_header_timeout"`
	// IdleTimeout closes a client's keep-alive connection idle this long.
	// Default 2 minutes.
	IdleTimeout time.Duration `json:"idle_timeout"`
	// ShutdownTimeout bounds the wait for calls in flight on shutdown; past
	// it their connections are closed (a second signal exits at once).
	// Default 10 s.
	ShutdownTimeout time.Duration `json:"shutdown_timeout"`

	// RouterModel names the optional model classifier the router asks when
	// its cheap signals are not confident; "" (default) disables it.
	RouterModel string `json:"router_model"`
	// RouterBaseURL is the classifier's OpenAI-compatible API ("" means
	// https://api.openai.com/v1); RouterAPIKey its key (environment only).
	RouterBaseURL string `json:"router_base_url"`
	RouterAPIKey  string `json:"-"`
	// RouterCoefficients replace the router's fitted ones: `rcm bench fit`
	// replays each held-out session through a proxy whose router was
	// fitted without it. No flag; nil (default) means the fitted ones.
	RouterCoefficients *router.Coefficients `json:"-"`

	// RouteMessages is the most messages a call may hold to be routed; a
	// larger call is forwarded whole (X-RCM-Fallback: too-large), since
	// routing time grows faster than the history (about 0.3 s for 10000
	// short messages, 7 s for 100000). Default 10000.
	RouteMessages int `json:"route_messages"`

	// ContextTokens is the budget of a routed context in rcm mode: above
	// it, older turns of the task are condensed (long tool outputs cut),
	// then dropped. 0 (default) sets no budget.
	ContextTokens int `json:"context_tokens"`
	// MemoryTokens bounds the task's state record message. Default 2000.
	MemoryTokens int `json:"memory_tokens"`
	// MemoryModel names the optional model that summarises a task's
	// progress after each turn, off the request path; "" (default) keeps
	// the deterministic record only. MemoryBaseURL is its API ("" means
	// https://api.openai.com/v1), MemoryAPIKey its key (environment only).
	MemoryModel   string `json:"memory_model"`
	MemoryBaseURL string `json:"memory_base_url"`
	MemoryAPIKey  string `json:"-"`

	// Retain is how long the store keeps a session after its last call;
	// a background sweeper deletes older ones. Default 30 days.
	Retain time.Duration `json:"retain"`
	// MaxStore bounds the store's live data in bytes: above it the least
	// recently used sessions are deleted. Default 1 GiB. The file keeps
	// its size until `rcm store compact` (bbolt reuses, never returns,
	// freed pages).
	MaxStore int64 `json:"max_store"`

	// OTLPEndpoint, when set, turns on OpenTelemetry traces: a span per
	// model call, exported over OTLP to this base URL (as
	// OTEL_EXPORTER_OTLP_ENDPOINT: http://collector:4318 for
	// http/protobuf, http://collector:4317 for grpc). OTLPProtocol is
	// ProtocolHTTP (default) or ProtocolGRPC.
	OTLPEndpoint string `json:"otlp_endpoint"`
	OTLPProtocol string `json:"otlp_protocol"`

	// CacheTTL is the lifetime of a provider's prompt cache that the
	// inspector's cached-prefix share assumes: a call's share is the
	// longest prefix it shares with the session's earlier calls forwarded
	// (or served from the cache) within it. Default DefaultCacheTTL.
	CacheTTL time.Duration `json:"cache_ttl"`
}

// Defaults of Config.
const (
	DefaultListen            = "127.0.0.1:8787"
	DefaultUpstream          = "https://api.openai.com/v1"
	DefaultAnthropic         = "https://api.anthropic.com"
	DefaultThreshold         = router.DefaultThreshold
	DefaultMaxBody           = 32 << 20
	DefaultHeaderTimeout     = 10 * time.Minute
	DefaultDialTimeout       = 10 * time.Second
	DefaultReadHeaderTimeout = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultMemoryTokens      = 2000
	DefaultRouteMessages     = 10000
	DefaultRetain            = 30 * 24 * time.Hour
	DefaultMaxStore          = 1 << 30
)

// Defaults fills each zero field with its default, and trims the base
// URLs' trailing slashes. It leaves DB empty when the user's data
// directory is unknown (Validate says so).
func (c *Config) Defaults() {
	set := func(p *string, v string) { *p = strings.TrimRight(cmp.Or(*p, v), "/") }
	set(&c.Upstream, DefaultUpstream)
	set(&c.AnthropicUpstream, DefaultAnthropic)
	c.Listen = cmp.Or(c.Listen, DefaultListen)
	c.Mode = Mode(strings.ToLower(strings.TrimSpace(string(cmp.Or(c.Mode, RCM)))))
	c.Threshold = cmp.Or(c.Threshold, DefaultThreshold)
	if c.DB == "" {
		c.DB, _ = memory.DefaultPath()
	}
	c.MaxBody = cmp.Or(c.MaxBody, DefaultMaxBody)
	c.HeaderTimeout = cmp.Or(c.HeaderTimeout, DefaultHeaderTimeout)
	c.DialTimeout = cmp.Or(c.DialTimeout, DefaultDialTimeout)
	c.ReadHeaderTimeout = cmp.Or(c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, DefaultShutdownTimeout)
	c.RouteMessages = cmp.Or(c.RouteMessages, DefaultRouteMessages)
	c.MemoryTokens = cmp.Or(c.MemoryTokens, DefaultMemoryTokens)
	c.Retain = cmp.Or(c.Retain, DefaultRetain)
	c.MaxStore = cmp.Or(c.MaxStore, DefaultMaxStore)
}

// Validate reports the first invalid field, a zero field standing for its
// default; it changes nothing (Defaults fills them in, and New does).
// The router's and the memory model's settings are checked here too, so
// that rcm serve refuses them before it opens anything.
func (c Config) Validate() error {
	c.Defaults()
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("listen %q: %w", c.Listen, err)
	}
	if err := checkExposure(c.Listen, c.AuthToken); err != nil {
		return err
	}
	for _, u := range [][2]string{{"upstream", c.Upstream}, {"anthropic-upstream", c.AnthropicUpstream}} {
		if err := str.HTTPURL(u[1]); err != nil {
			return fmt.Errorf("%s %q: %w", u[0], u[1], err)
		}
	}
	if _, err := parseMode(string(c.Mode)); err != nil {
		return err
	}
	if !(c.Threshold > 0 && c.Threshold <= 1) { // NaN too
		return fmt.Errorf("threshold %v: want a value in (0, 1]", c.Threshold)
	}
	if c.Store != "" && !memory.IsPostgres(c.Store) {
		return fmt.Errorf("store %q: want a postgres:// URL (a bbolt file goes in --db)", memory.Redacted(c.Store))
	}
	if c.DB == "" && c.Store == "" {
		_, err := memory.DefaultPath()
		return fmt.Errorf("db: %w (set --db)", err)
	}
	if c.MaxBody < 0 {
		return errors.New("max-body: must be positive")
	}
	if c.HeaderTimeout < 0 || c.DialTimeout < 0 || c.ReadHeaderTimeout < 0 || c.IdleTimeout < 0 || c.ShutdownTimeout < 0 {
		return errors.New("timeouts must be positive")
	}
	if c.RouteMessages < 0 {
		return errors.New("route-messages must be positive")
	}
	if c.ContextTokens < 0 || c.MemoryTokens < 0 {
		return errors.New("context-tokens and memory-tokens must be positive")
	}
	if c.Retain < time.Minute {
		return fmt.Errorf("retain %v: want at least 1m", c.Retain)
	}
	if c.MaxStore < 1<<20 {
		return fmt.Errorf("max-store %d: want at least 1 MiB", c.MaxStore)
	}
	if c.CacheTTL < 0 {
		return fmt.Errorf("cache-ttl %v: must be positive", c.CacheTTL)
	}
	if err := c.routerConfig().Validate(); err != nil {
		return err
	}
	if sum := c.summarizer(); sum != nil {
		return sum.Validate()
	}
	return nil
}

// routerConfig is the router's part of the configuration.
func (c *Config) routerConfig() router.Config {
	return router.Config{Threshold: c.Threshold, Model: c.RouterModel, BaseURL: c.RouterBaseURL, APIKey: c.RouterAPIKey, Coefficients: c.RouterCoefficients}
}

// summarizer is the optional memory model, nil when none of its settings
// is given; a base URL or key without a model is refused by its Validate.
func (c *Config) summarizer() *memory.Summarizer {
	if c.MemoryModel == "" && c.MemoryBaseURL == "" && c.MemoryAPIKey == "" {
		return nil
	}
	return &memory.Summarizer{Model: c.MemoryModel, BaseURL: c.MemoryBaseURL, APIKey: c.MemoryAPIKey}
}
