package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rcm-dev/rcm/inspector"
	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/redact"
	"github.com/rcm-dev/rcm/router"
	"github.com/rcm-dev/rcm/transcript"
)

// Response headers of the wire contract.
const (
	HeaderMode       = "X-RCM-Mode"
	HeaderSession    = "X-RCM-Session"
	HeaderTask       = "X-RCM-Task"
	HeaderConfidence = "X-RCM-Confidence"
	HeaderFallback   = "X-RCM-Fallback"
	HeaderTokensIn   = "X-RCM-Tokens-In"
	HeaderTokensOut  = "X-RCM-Tokens-Out"
	HeaderThreshold  = "X-RCM-Threshold"
	// HeaderRouterCalls: what the router's model classifier cost on this
	// call, "calls errors prompt-tokens completion-tokens milliseconds"
	// (rcm bench replay reports it); absent
	// when it was not asked.
	HeaderRouterCalls = "X-RCM-Router-Calls"
)

// Fallback values of X-RCM-Fallback.
const (
	FallbackNone      = "none"
	FallbackThreshold = "threshold"
	FallbackError     = "error"
	FallbackSideCall  = "side-call"
	FallbackTooLarge  = "too-large" // more messages than Config.RouteMessages
)

// Handler is the proxy: an http.Handler that rebuilds model calls' contexts
// and forwards them to the upstream model API.
type Handler struct {
	cfg             Config
	target          *url.URL // cfg.Upstream
	anthropicTarget *url.URL // cfg.AnthropicUpstream
	transport       *http.Transport
	proxy           *httputil.ReverseProxy // every forwarded request's (see call)
	log             *slog.Logger
	errLog          *log.Logger // ReverseProxy's own messages, into log
	token           []byte      // SHA-256 of cfg.AuthToken; nil without one
	store           *memory.Store
	router          *router.Router
	admin           http.Handler // the inspector under /rcm/
	// summarizer is the optional memory model (nil without --memory-model).
	summarizer *memory.Summarizer

	// after tracks work done after a response (store writes) so that Close
	// waits for it before the store is closed.
	after   sync.WaitGroup
	metrics *metrics
	tracing *tracing // nil without Config.OTLPEndpoint

	// feed streams each stored call to the inspector's page; prefixes
	// keeps each session's recent forwarded messages for its cached-prefix
	// share.
	feed     inspector.Feed
	prefixes prefixes
	// parses keeps each session's last transcript for the next call's
	// parse (maxParseBytes of bodies).
	parses *transcript.Cache
}

// maxParseBytes bounds the bodies kept for incremental parsing; past it the
// least recently active sessions' next call is parsed whole.
const maxParseBytes = 64 << 20

// New returns a Handler for cfg, with its defaults filled in (Defaults),
// once it has passed Validate. It opens the store at cfg.DB; Close closes
// it.
func New(cfg Config, logger *slog.Logger) (*Handler, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	target, err := url.Parse(cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %w", cfg.Upstream, err)
	}
	anthropicTarget, err := url.Parse(cfg.AnthropicUpstream)
	if err != nil {
		return nil, fmt.Errorf("anthropic-upstream %q: %w", cfg.AnthropicUpstream, err)
	}
	// Errors quote URLs and upstream answers: no secret reaches the log.
	logger = slog.New(redact.Handler(logger.Handler()))
	rt, err := router.New(cfg.routerConfig())
	if err != nil {
		return nil, err
	}
	sum := cfg.summarizer()
	tracing, err := newTracing(&cfg)
	if err != nil {
		return nil, err
	}
	opts := memory.Options{Retain: cfg.Retain, MaxStore: cfg.MaxStore, Log: logger}
	var store *memory.Store
	if cfg.Store != "" {
		store, err = memory.OpenPostgres(cfg.Store, opts)
	} else {
		store, err = memory.Open(cfg.DB, opts)
	}
	if err != nil {
		tracing.close(context.Background())
		return nil, err
	}
	h := &Handler{
		cfg:             cfg,
		target:          target,
		anthropicTarget: anthropicTarget,
		transport:       newTransport(&cfg),
		log:             logger,
		errLog:          slog.NewLogLogger(logger.Handler(), slog.LevelInfo),
		store:           store,
		router:          rt,
		parses:          transcript.NewCache(maxParseBytes),
		metrics:         newMetrics(),
		tracing:         tracing,
		prefixes:        prefixes{ttl: cfg.CacheTTL},

		summarizer: sum,
	}
	if cfg.AuthToken != "" {
		sum := sha256.Sum256([]byte(cfg.AuthToken))
		h.token = sum[:]
	}
	h.proxy = h.newReverseProxy()
	h.admin = h.inspector()
	// Calls other replicas serve reach this one's inspector feed too.
	store.Follow(func(session string, e memory.Event) { h.feed.Publish(inspector.Call{Session: session, Event: e}) })
	return h, nil
}

// Close waits for the work that follows responses already sent, then closes
// the store. Call it after the server has stopped taking requests.
func (h *Handler) Close() error {
	h.feed.Close()
	h.after.Wait()
	// The spans still batched go out, within a bound: a collector that is
	// gone must not hold the shutdown.
	ctx, cancel := context.WithTimeout(context.Background(), traceFlush)
	defer cancel()
	if err := h.tracing.close(ctx); err != nil {
		h.log.Warn("spans not exported", "err", err)
	}
	return h.store.Close()
}

// traceFlush bounds the export of the last spans on Close.
const traceFlush = 5 * time.Second

// EndStreams ends the inspector's live streams, which would otherwise hold
// a graceful shutdown until its timeout (http.Server.RegisterOnShutdown).
func (h *Handler) EndStreams() { h.feed.Close() }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in := time.Now()
	mode, path, ok := splitMode(r.URL.Path)
	switch {
	case !ok && strings.HasPrefix(r.URL.Path, "/rcm/"):
		if e := h.guard(r, true); e != nil {
			writeError(w, e)
			return
		}
		if h.token != nil && login(w, r) {
			return
		}
		h.admin.ServeHTTP(w, r)
		return
	case !ok:
		writeError(w, &httpError{http.StatusNotFound, "not_found", fmt.Errorf("no route %s: model calls go to /v1/... (or /native/v1, /router/v1, /rcm/v1)", r.URL.Path)})
		return
	}
	if e := h.guard(r, false); e != nil {
		writeError(w, e)
		return
	}
	if mode == "" {
		mode = h.cfg.Mode
		if v := r.Header.Get(HeaderMode); v != "" {
			m, err := parseMode(v)
			if err != nil {
				writeError(w, &httpError{http.StatusBadRequest, "bad_mode", fmt.Errorf("%s: %w", HeaderMode, err)})
				return
			}
			mode = m
		}
	}
	threshold := h.cfg.Threshold
	if vs, ok := r.Header[http.CanonicalHeaderKey(HeaderThreshold)]; ok {
		v := strings.Join(vs, ",")
		t, err := ParseThreshold(v)
		if err != nil {
			writeError(w, &httpError{http.StatusBadRequest, "bad_threshold", fmt.Errorf("%s %q: %w", HeaderThreshold, v, err)})
			return
		}
		threshold = t
	}
	if err := checkSession(r.Header); err != nil {
		writeError(w, &httpError{http.StatusBadRequest, "bad_session", err})
		return
	}
	w.Header().Set(HeaderMode, string(mode))
	if isUpgrade(r) {
		if mode != Native && path == "/v1/responses" && isWebSocket(r) {
			h.serveWebSocket(w, r, path, mode, threshold)
			return
		}
		// Other WebSocket traffic is relayed as it comes, never rebuilt.
		h.forward(w, r, path, nil, nil)
		return
	}
	format, call := transcript.FormatOf(path)
	if r.Method != http.MethodPost || !call {
		h.forward(w, r, path, nil, nil)
		return
	}
	body, err := readBody(w, r, h.cfg.MaxBody)
	if err != nil {
		writeError(w, bodyError(r.Context(), err))
		return
	}
	h.after.Add(1)
	a := h.assemble(r, format, mode, threshold, body)
	a.clock.in = in
	h.startTrace(r, a, format, path, body)
	// Deferred: an aborted answer (a panic with http.ErrAbortHandler) is
	// accounted for too, and it is complete when the client left only
	// after its terminal event (Codex closes the connection on
	// response.completed).
	defer h.done(r, a)
	defer h.answered(a)
	a.setHeaders(w.Header())
	h.forward(w, r, path, a.body, a)
}

// answered takes a complete call's place in its session's chain of
// forwarded contexts, whose share is measured after the response, and lets
// go of the forwarded bytes: the writes that follow may queue behind other
// sessions' (memory.Call), and do not need them.
func (h *Handler) answered(a *assembly) {
	if a.complete && a.status/100 == 2 {
		if a.prefix = h.prefixes.take(a); a.prefix != nil {
			go a.prefix.measure()
		}
	}
	a.body = nil
}

// splitMode strips a mode prefix (/native, /router, /rcm) from a /v1 path.
// ok is false for paths outside /v1.
func splitMode(p string) (mode Mode, path string, ok bool) {
	for _, m := range []Mode{Native, Router, RCM} {
		prefix := "/" + string(m)
		if strings.HasPrefix(p, prefix+"/v1/") || p == prefix+"/v1" {
			return m, strings.TrimPrefix(p, prefix), true
		}
	}
	return "", p, p == "/v1" || strings.HasPrefix(p, "/v1/")
}

// forward sends the request upstream (body, or the client's own body when
// nil) and streams the answer back. a, when not nil, observes the answer.
// It is complete once the answer's end has reached the client: its
// terminal event, for an event stream, written and flushed (whatever the
// client does next: Codex closes the connection as soon as it reads
// response.completed, which cancels the rest of the upstream's stream),
// else the whole body. A client that leaves before that cancels the
// upstream call, and ReverseProxy aborts the response by panicking with
// http.ErrAbortHandler; the caller's deferred done sees it incomplete.
func (h *Handler) forward(w http.ResponseWriter, r *http.Request, path string, body []byte, a *assembly) {
	c := &call{path: path, body: body}
	if a == nil {
		h.proxy.ServeHTTP(w, withCall(r, c))
		return
	}
	r = r.WithContext(a.clock.trace(r.Context()))
	h.traceUpstream(r, a)
	start := time.Now()
	complete := func() {
		a.latency = time.Since(start)
		a.complete = true
	}
	out := &flushed{ResponseWriter: w}
	var answer *observed
	c.observe = func(resp *http.Response, ev *events) {
		a.status = resp.StatusCode
		a.sse = ev != nil
		answer = &observed{src: resp.Body, tee: a.tee(a.sse)}
		resp.Body = answer
		if ev != nil {
			ev.end = &ending{format: a.format}
			ev.delivered = func() {
				if out.failed() == nil {
					complete()
				}
			}
		}
	}
	h.proxy.ServeHTTP(out, withCall(r, c))
	if answer != nil && answer.eof && !a.complete {
		complete()
	}
}

// flushed is the client's ResponseWriter as ReverseProxy writes an observed
// answer to it: it keeps the outcome of the latest flush, which
// ReverseProxy (flushing after every write) does not look at. A flush may
// come from ReverseProxy's latency timer, on a goroutine of its own.
type flushed struct {
	http.ResponseWriter
	mu  sync.Mutex
	err error
}

func (f *flushed) FlushError() error {
	err := http.NewResponseController(f.ResponseWriter).Flush()
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
	return err
}

// failed reports the latest flush's error.
func (f *flushed) failed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *flushed) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// writeJSON answers with v as JSON (inspector endpoints).
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
