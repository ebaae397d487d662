package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/proxy"
	"github.com/rcm-dev/rcm/redact"
)

func serveOptions(c *proxy.Config) []option {
	return []option{
		{flag: "listen", env: "RCM_LISTEN", help: "address to serve on (default " + proxy.DefaultListen + ")", set: stringOpt(&c.Listen)},
		{flag: "upstream", env: "RCM_UPSTREAM", help: "model API base URL, up to /v1 (default " + proxy.DefaultUpstream + ")", set: stringOpt(&c.Upstream)},
		{flag: "anthropic-upstream", env: "RCM_ANTHROPIC_UPSTREAM", help: "Anthropic API base URL, without /v1, for /v1/messages (default " + proxy.DefaultAnthropic + ")", set: stringOpt(&c.AnthropicUpstream)},
		{flag: "upstream-key", env: "RCM_UPSTREAM_KEY", help: "API key sent upstream only when the client sends no Authorization or x-api-key; prefer the environment variable (a flag shows in process lists)", set: stringOpt(&c.UpstreamKey), secret: true},
		{flag: "auth-token", env: "RCM_AUTH_TOKEN", help: "token rcm requires on /rcm/... (Authorization: Bearer or X-RCM-Auth) and, with --upstream-key, on proxied calls (X-RCM-Auth); required to listen beyond loopback; prefer the environment variable", set: stringOpt(&c.AuthToken), secret: true},
		{flag: "mode", env: "RCM_MODE", help: "default mode: native, router or rcm (default rcm); per request: X-RCM-Mode or a /native|/router|/rcm path prefix", set: func(s string) error { c.Mode = proxy.Mode(s); return nil }},
		{flag: "threshold", env: "RCM_THRESHOLD", help: "router confidence below which the full history is kept, in (0, 1] (default " + strconv.FormatFloat(proxy.DefaultThreshold, 'f', -1, 64) + "); per request: X-RCM-Threshold", set: thresholdOpt(&c.Threshold)},
		{flag: "db", env: "RCM_DB", help: "bbolt store file (default: rcm/rcm.db under the user's data directory)", set: stringOpt(&c.DB)},
		storeOption(&c.Store),
		{flag: "max-body", env: "RCM_MAX_BODY", help: "largest request body in bytes; larger ones get 413 (default 33554432, 32 MiB)", set: intOpt(&c.MaxBody)},
		{flag: "header-timeout", env: "RCM_HEADER_TIMEOUT", help: "longest wait for the upstream's response headers before 504 (default 10m)", set: durationOpt(&c.HeaderTimeout)},
		{flag: "dial-timeout", env: "RCM_DIAL_TIMEOUT", help: "longest wait to connect to the upstream before 502 (default 10s)", set: durationOpt(&c.DialTimeout)},
		{flag: "read-header-timeout", env: "RCM_READ_HEADER_TIMEOUT", help: "longest wait for a client's request headers (default 30s)", set: durationOpt(&c.ReadHeaderTimeout)},
		{flag: "idle-timeout", env: "RCM_IDLE_TIMEOUT", help: "closes a client's keep-alive connection idle this long (default 2m)", set: durationOpt(&c.IdleTimeout)},
		{flag: "shutdown-timeout", env: "RCM_SHUTDOWN_TIMEOUT", help: "longest wait for calls in flight on SIGINT/SIGTERM before their connections are closed; a second signal exits at once (default 10s)", set: durationOpt(&c.ShutdownTimeout)},
		{flag: "router-model", env: "RCM_ROUTER_MODEL", help: "model the router asks when its cheap signals are not confident (default: none, cheap signals only)", set: stringOpt(&c.RouterModel)},
		{flag: "router-base-url", env: "RCM_ROUTER_BASE_URL", help: "OpenAI-compatible API of the router's model (default https://api.openai.com/v1)", set: stringOpt(&c.RouterBaseURL)},
		{flag: "route-messages", env: "RCM_ROUTE_MESSAGES", help: "most messages a call may hold to be routed; larger calls are forwarded whole with X-RCM-Fallback: too-large (default 10000)", set: intOpt(&c.RouteMessages)},
		{flag: "context-tokens", env: "RCM_CONTEXT_TOKENS", help: "rcm mode: token budget of a routed context; above it older turns are condensed, then dropped (default 0: no budget)", set: intOpt(&c.ContextTokens)},
		{flag: "memory-tokens", env: "RCM_MEMORY_TOKENS", help: "rcm mode: largest task state record message, in tokens (default 2000)", set: intOpt(&c.MemoryTokens)},
		{flag: "memory-model", env: "RCM_MEMORY_MODEL", help: "rcm mode: model that summarises each task's progress after a turn, off the request path (default: none, deterministic records only)", set: stringOpt(&c.MemoryModel)},
		{flag: "memory-base-url", env: "RCM_MEMORY_BASE_URL", help: "OpenAI-compatible API of the memory model (default https://api.openai.com/v1)", set: stringOpt(&c.MemoryBaseURL)},
		{flag: "memory-api-key", env: "RCM_MEMORY_API_KEY", help: "key for the memory model; prefer the environment variable", set: stringOpt(&c.MemoryAPIKey), secret: true},
		{flag: "router-api-key", env: "RCM_ROUTER_API_KEY", help: "key for the router's model; prefer the environment variable", set: stringOpt(&c.RouterAPIKey), secret: true},
		{flag: "retain", env: "RCM_RETAIN", help: "how long a session is kept after its last call, e.g. 30d, 12h (default 30d); a sweeper deletes older ones every 10m", set: daysOpt(&c.Retain)},
		{flag: "cache-ttl", env: "RCM_CACHE_TTL", help: "lifetime of the provider's prompt cache the inspector's cached-prefix share assumes (default 5m)", set: durationOpt(&c.CacheTTL)},
		{flag: "otlp-endpoint", env: "OTEL_EXPORTER_OTLP_ENDPOINT", help: "OTLP collector base URL; when set, a span per model call is exported there, e.g. http://127.0.0.1:4318 (default: none, no traces)", set: stringOpt(&c.OTLPEndpoint)},
		{flag: "otlp-protocol", env: "OTEL_EXPORTER_OTLP_PROTOCOL", help: "OTLP protocol: " + proxy.ProtocolHTTP + " or " + proxy.ProtocolGRPC + " (default " + proxy.ProtocolHTTP + ")", set: stringOpt(&c.OTLPProtocol)},
		{flag: "max-store", env: "RCM_MAX_STORE", help: "bound on the store's live data, e.g. 512MiB, 2GB (default 1GiB); above it the least recently used sessions are deleted", set: sizeOpt(&c.MaxStore)},
	}
}

func serve(args []string) error {
	var cfg proxy.Config
	if err := parseOptions("serve", args, serveOptions(&cfg), true, "Usage: rcm serve [flags]\n\nRuns the proxy. Every flag has an environment twin; --config FILE sets the same keys from JSON."); err != nil {
		return err
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := slog.New(redact.Handler(slog.NewTextHandler(os.Stderr, nil)))
	h, err := proxy.New(cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := h.Close(); err != nil {
			log.Error("closing store", "err", err)
		}
	}()

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	srv := h.Server()
	srv.RegisterOnShutdown(h.EndStreams)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("rcm serving", "listen", ln.Addr().String(), "upstream", cfg.Upstream, "anthropic_upstream", cfg.AnthropicUpstream, "mode", cfg.Mode, "threshold", cfg.Threshold, "store", storeName(cfg))
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// A second signal exits at once; the store's last transaction is either
	// committed or not (bbolt), never torn.
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	stop()
	go func() {
		<-again
		log.Warn("second signal: exiting now")
		os.Exit(1)
	}()
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	shutdown, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("shutdown: %w", err)
		}
		// Calls still streaming are cut: their clients see an error.
		log.Warn("shutdown timeout: closing connections still open")
		srv.Close()
	}
	return nil
}

// storeOption is --store, the PostgreSQL database replicas share.
func storeOption(p *string) option {
	return option{flag: "store", env: "RCM_STORE", help: "PostgreSQL database shared by rcm replicas, postgres://user@host/db (the libpq PG* variables fill what it leaves out); instead of --db", set: stringOpt(p)}
}

// storeName is the store cfg names, for the log: never a password.
func storeName(cfg proxy.Config) string {
	if cfg.Store != "" {
		return memory.Redacted(cfg.Store)
	}
	return cfg.DB
}
