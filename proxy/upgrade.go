package proxy

import (
	"net/http"
	"strings"
)

// isUpgrade reports whether r asks to switch protocols (the Responses API's
// WebSocket mode). httputil.ReverseProxy relays the 101 handshake and then
// both directions of the hijacked connection; rcm does not rebuild
// WebSocket traffic, it forwards it as it comes.
func isUpgrade(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" && strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}
