package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
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
	}
}

// Hop-by-hop headers (RFC 9110 7.6.1) are the connection's, not the
// message's: they are never forwarded in either direction.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// upstreamRequest builds the request to the model API: the client's method,
// path below /v1 (on the Anthropic upstream for /v1/messages), query and headers (less hop-by-hop, rcm's own and
// Accept-Encoding, so that the transport negotiates and decodes gzip for the
// tee), with body as the payload. The client's credentials pass through;
// the configured key is added only when the client sent none.
func (h *Handler) upstreamRequest(ctx context.Context, r *http.Request, path string, body []byte) (*http.Request, error) {
	target := h.cfg.Upstream + strings.TrimPrefix(path, "/v1")
	if anthropic(path) {
		target = h.cfg.AnthropicUpstream + path
	}
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	} else if r.Body != nil && r.ContentLength != 0 {
		rd = r.Body
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("build upstream request: %w", err)
	}
	out.Header = r.Header.Clone()
	removeHopHeaders(out.Header)
	for name := range out.Header {
		if strings.HasPrefix(strings.ToLower(name), "x-rcm-") {
			out.Header.Del(name)
		}
	}
	out.Header.Del("Accept-Encoding")
	out.Header.Del("Content-Length")
	if body != nil {
		out.ContentLength = int64(len(body))
	} else {
		out.ContentLength = r.ContentLength
	}
	h.setCredentials(out.Header, path)
	return out, nil
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

// copyHeaders writes the upstream's response headers to the client's.
func copyHeaders(dst, src http.Header) {
	for name, vs := range src {
		dst[name] = append([]string(nil), vs...)
	}
	removeHopHeaders(dst)
}

func setInt(h http.Header, name string, v int) { h.Set(name, strconv.Itoa(v)) }
