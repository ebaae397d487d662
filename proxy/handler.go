package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

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
)

// Fallback values of X-RCM-Fallback.
const (
	FallbackNone      = "none"
	FallbackThreshold = "threshold"
	FallbackError     = "error"
	FallbackSideCall  = "side-call"
)

// Handler is the proxy: an http.Handler that rebuilds model calls' contexts
// and forwards them to the upstream model API.
type Handler struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
	store  *memory.Store
	router *router.Router
	admin  http.Handler // the inspector under /rcm/
	// upgrader relays WebSocket upgrades (Responses API WebSocket mode).
	upgrader http.Handler
	// summarizer is the optional memory model (nil without --memory-model).
	summarizer *memory.Summarizer

	// after tracks work done after a response (store writes) so that Close
	// waits for it before the store is closed; writes orders it per session.
	after   sync.WaitGroup
	writes  pending
	metrics metrics
}

// New returns a Handler for cfg, which must have passed Validate. It opens
// the store at cfg.DB; Close closes it.
func New(cfg Config, log *slog.Logger) (*Handler, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Errors quote URLs and upstream answers: no secret reaches the log.
	log = slog.New(redact.Handler(log.Handler()))
	rt, err := router.New(router.Config{
		Threshold: cfg.Threshold,
		Model:     cfg.RouterModel,
		BaseURL:   cfg.RouterBaseURL,
		APIKey:    cfg.RouterAPIKey,
	})
	if err != nil {
		return nil, err
	}
	var sum *memory.Summarizer
	if cfg.MemoryModel != "" {
		sum = &memory.Summarizer{Model: cfg.MemoryModel, BaseURL: cfg.MemoryBaseURL, APIKey: cfg.MemoryAPIKey}
		if err := sum.Validate(); err != nil {
			return nil, err
		}
	}
	store, err := memory.Open(cfg.DB, memory.Options{Retain: cfg.Retain, MaxStore: cfg.MaxStore, Log: log})
	if err != nil {
		return nil, err
	}
	h := &Handler{
		cfg:    cfg,
		client: &http.Client{Transport: newTransport(&cfg), CheckRedirect: noRedirect},
		log:    log,
		store:  store,
		router: rt,

		summarizer: sum,
	}
	h.admin = h.inspector()
	target, err := url.Parse(cfg.Upstream)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("upstream %q: %w", cfg.Upstream, err)
	}
	h.upgrader = h.newUpgrader(target)
	return h, nil
}

// Close waits for the work that follows responses already sent, then closes
// the store. Call it after the server has stopped taking requests.
func (h *Handler) Close() error {
	h.after.Wait()
	return h.store.Close()
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mode, path, ok := splitMode(r.URL.Path)
	switch {
	case !ok && strings.HasPrefix(r.URL.Path, "/rcm/"):
		h.admin.ServeHTTP(w, r)
		return
	case !ok:
		writeError(w, &Error{http.StatusNotFound, "not_found", fmt.Errorf("no route %s: model calls go to /v1/... (or /native/v1, /router/v1, /rcm/v1)", r.URL.Path)})
		return
	}
	if mode == "" {
		mode = h.cfg.Mode
		if v := r.Header.Get(HeaderMode); v != "" {
			m, err := ParseMode(v)
			if err != nil {
				writeError(w, &Error{http.StatusBadRequest, "bad_mode", fmt.Errorf("%s: %w", HeaderMode, err)})
				return
			}
			mode = m
		}
	}
	threshold := h.cfg.Threshold
	if v := r.Header.Get(HeaderThreshold); v != "" {
		t, err := strconv.ParseFloat(v, 64)
		if err != nil || t <= 0 || t > 1 {
			writeError(w, &Error{http.StatusBadRequest, "bad_threshold", fmt.Errorf("%s %q: want a number in (0, 1]", HeaderThreshold, v)})
			return
		}
		threshold = t
	}
	w.Header().Set(HeaderMode, string(mode))
	if isUpgrade(r) {
		h.upgrader.ServeHTTP(w, r)
		return
	}
	format, call := transcript.FormatOf(path)
	if r.Method != http.MethodPost || !call {
		h.forward(w, r, path, nil, nil)
		return
	}
	body, err := readBody(w, r, h.cfg.MaxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, &Error{http.StatusRequestEntityTooLarge, "body_too_large",
				fmt.Errorf("request body exceeds %d bytes (raise --max-body)", h.cfg.MaxBody)})
			return
		}
		writeError(w, classify(r.Context(), fmt.Errorf("read request body: %w", err)))
		return
	}
	h.after.Add(1)
	a := h.assemble(r, format, mode, threshold, body)
	a.setHeaders(w.Header())
	h.forward(w, r, path, a.body, a)
	h.done(r, a)
}

// readBody reads the request body, at most max bytes, in one allocation
// when the client declared its length.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= max {
		buf.Grow(int(n) + 1) // +1: ReadFrom's final read finds room and sees EOF
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, max))
	return buf.Bytes(), err
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
// nil) and streams the answer back. a, when not nil, observes the response.
func (h *Handler) forward(w http.ResponseWriter, r *http.Request, path string, body []byte, a *assembly) {
	ctx := r.Context()
	start := time.Now()
	req, err := h.upstreamRequest(ctx, r, path, body)
	if err != nil {
		writeError(w, classify(ctx, err))
		return
	}
	resp, err := h.client.Do(req)
	if err != nil {
		e := classify(ctx, err)
		h.log.Warn("upstream request failed", "path", path, "status", e.Status, "err", err)
		writeError(w, e)
		return
	}
	defer resp.Body.Close()
	copyHeaders(w.Header(), resp.Header)
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if a != nil {
		a.sse = sse
	}
	if sse {
		w.Header().Set("X-Accel-Buffering", "no")
	}
	w.WriteHeader(resp.StatusCode)
	var tee io.Writer
	if a != nil && a.mode == RCM {
		// Only rcm mode learns from answers (task records, summaries).
		tee = a.response()
	}
	n, err := copyResponse(w, resp.Body, tee, sse)
	if err != nil {
		// Headers are gone: nothing to answer; the client either left (its
		// context cancels the upstream read) or the upstream broke off.
		h.log.Info("response copy stopped", "path", path, "bytes", n, "status", classify(ctx, err).Status, "err", err)
		return
	}
	if a != nil {
		a.latency = time.Since(start)
		a.status = resp.StatusCode
		a.complete = true
	}
}

// writeJSON answers with v as JSON (inspector endpoints).
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
