package proxy

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// newTransport is the upstream client's transport: proxies from the
// environment, bounded dial and header waits, no overall timeout (streams
// run as long as the model talks).
func newTransport(cfg *Config) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: cfg.HeaderTimeout,
		ExpectContinueTimeout: time.Second,
		// A body up to 64 KB goes out through the connection's buffer;
		// past the 4 KB default, net/http copies it through a fresh 32 KB
		// buffer on every call.
		WriteBufferSize: 64 << 10,
	}
}

// call is what the shared ReverseProxy needs of one forwarded request,
// carried in its context: the path below the API root, the body to send
// (nil: the client's own) and, when not nil, the observer of the answer,
// which sees it before its headers go out, with the reader that will hand
// an event stream to the client one event at a time (nil for other
// answers).
type call struct {
	path    string
	body    []byte
	observe func(*http.Response, *events)
}

type callKey struct{}

// withCall returns r carrying c for the shared ReverseProxy.
func withCall(r *http.Request, c *call) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), callKey{}, c))
}

func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// newReverseProxy returns the httputil.ReverseProxy every forwarded request
// goes through (each carries its call in its context). It owns hop-by-hop
// headers, trailers, 1xx responses, upgrades and, once headers are sent,
// aborting the client's response (http.ErrAbortHandler) when the upstream
// breaks off, so that the harness sees the failure.
func (h *Handler) newReverseProxy() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { h.rewrite(pr, callOf(pr.In.Context())) },
		Transport:     h.transport,
		FlushInterval: -1,
		BufferPool:    copyBuffers,
		ErrorLog:      h.errLog,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			e := classify(r.Context(), err)
			h.log.Warn("upstream request failed", "path", callOf(r.Context()).path, "status", e.Status, "err", err)
			writeError(w, e)
		},
		ModifyResponse: func(resp *http.Response) error {
			dropRCMHeaders(resp.Header) // rcm's own X-RCM-* answer headers win
			var ev *events
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				resp.Header.Set("X-Accel-Buffering", "no")
				ev = &events{}
			}
			if c := callOf(resp.Request.Context()); c.observe != nil {
				c.observe(resp, ev)
			}
			if ev != nil {
				ev.src, resp.Body = resp.Body, ev
			}
			return nil
		},
	}
}

// copyBuffers recycles ReverseProxy's 32 KB copy buffers across calls.
var copyBuffers = &bufferPool{}

type bufferPool struct{ sync.Pool }

func (p *bufferPool) Get() []byte {
	if b, ok := p.Pool.Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, 32<<10)
}

func (p *bufferPool) Put(b []byte) { p.Pool.Put(&b) }

// rewrite builds the request to the model API: the client's method, the
// call's upstream URL (upstreamURL) and headers (upstreamHeader; less
// hop-by-hop ones, which ReverseProxy drops, and Accept-Encoding, so that
// the transport negotiates and decodes gzip for the tee), with the call's
// body (plain: readBody decoded any Content-Encoding) as the payload when
// not nil.
func (h *Handler) rewrite(pr *httputil.ProxyRequest, c *call) {
	pr.Out.URL = h.upstreamURL(c.path, pr.In.URL.RawQuery)
	pr.Out.Host = pr.Out.URL.Host
	h.upstreamHeader(pr.Out.Header, c.path)
	pr.Out.Header.Del("Accept-Encoding")
	if body := c.body; body != nil {
		pr.Out.Body = io.NopCloser(bytes.NewReader(body))
		pr.Out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		pr.Out.ContentLength = int64(len(body))
		pr.Out.Header.Del("Content-Length")
		pr.Out.Header.Del("Content-Encoding") // readBody decoded it
	} else if pr.Out.Body != nil && pr.Out.ContentLength > 0 {
		pr.Out.Body = &declared{ReadCloser: pr.Out.Body, left: pr.Out.ContentLength}
	}
}

// upstreamURL is where a call to path (below the API root) goes, over HTTP
// and WebSocket alike: below --upstream, whose base ends in /v1, or, for
// /v1/messages and its sub-routes, below --anthropic-upstream, whose base
// has none; the client's query follows the base's own.
func (h *Handler) upstreamURL(path, query string) *url.URL {
	target, below := h.target, strings.TrimPrefix(path, "/v1")
	if anthropic(path) {
		target, below = h.anthropicTarget, path
	}
	u := *target
	u.User = nil // never sent as credentials
	u.Path, u.RawPath = strings.TrimRight(target.Path, "/")+below, ""
	if u.RawQuery != "" && query != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += query
	return &u
}

// upstreamHeader makes the client's headers the upstream's, over HTTP and
// WebSocket alike: rcm's own (X-RCM-*) never cross rcm, and the client's
// credentials pass through, the configured key added only when the client
// sent none.
func (h *Handler) upstreamHeader(hdr http.Header, path string) {
	dropRCMHeaders(hdr)
	h.setCredentials(hdr, path)
}

// declared ends a streamed body at its declared length. Having sent that
// many bytes, net/http's transport reads the body once more to check that
// it is not longer; when the answer's headers have gone out meanwhile,
// the server has closed the client's body, that read fails, and the
// transport cuts the answer it is relaying (golang/go#40747). The server
// enforces the length on the client's side, so the last read can safely
// be an EOF of our own.
type declared struct {
	io.ReadCloser
	left int64
}

func (d *declared) Read(p []byte) (int, error) {
	if d.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.ReadCloser.Read(p)
	d.left -= int64(n)
	return n, err
}

// dropRCMHeaders removes rcm's own headers (X-RCM-*): they never cross rcm.
func dropRCMHeaders(hdr http.Header) {
	for name := range hdr {
		if len(name) >= 6 && strings.EqualFold(name[:6], "x-rcm-") {
			delete(hdr, name)
		}
	}
}

// setCredentials adds the configured key when the client sent none: as
// x-api-key for Anthropic's /messages, as a bearer token elsewhere.
func (h *Handler) setCredentials(hdr http.Header, path string) {
	if h.cfg.UpstreamKey == "" || hdr.Get("Authorization") != "" || hdr.Get("X-Api-Key") != "" {
		return
	}
	if anthropic(path) {
		hdr.Set("X-Api-Key", h.cfg.UpstreamKey)
	} else {
		hdr.Set("Authorization", "Bearer "+h.cfg.UpstreamKey)
	}
}

// anthropic reports whether path (below the API root) is Anthropic's:
// /v1/messages and its sub-routes (count_tokens, batches).
func anthropic(path string) bool {
	return path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/")
}

func setInt(h http.Header, name string, v int) { h.Set(name, strconv.Itoa(v)) }
