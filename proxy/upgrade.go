package proxy

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// newUpgrader returns the handler of connection upgrades (the Responses
// API's WebSocket mode): httputil.ReverseProxy relays the 101 handshake and
// then both directions of the hijacked connection. rcm does not rebuild
// WebSocket traffic; it forwards it as it comes.
func (h *Handler) newUpgrader(target *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			_, path, _ := splitMode(pr.In.URL.Path)
			pr.SetURL(target)
			pr.Out.URL.Path = strings.TrimRight(target.Path, "/") + strings.TrimPrefix(path, "/v1")
			pr.Out.URL.RawPath = ""
			pr.Out.Host = target.Host
			for name := range pr.Out.Header {
				if strings.HasPrefix(strings.ToLower(name), "x-rcm-") {
					pr.Out.Header.Del(name)
				}
			}
			h.setCredentials(pr.Out.Header, path)
		},
		Transport: h.client.Transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			e := classify(r.Context(), err)
			h.log.Warn("upgrade failed", "path", r.URL.Path, "status", e.Status, "err", err)
			writeError(w, e)
		},
	}
}

// isUpgrade reports whether r asks to switch protocols (WebSocket).
func isUpgrade(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" && strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}
