package overhead

import (
	"net/http"
	"net/http/httputil"
	"net/url"
)

// Bare is the plainest Go reverse proxy in front of upstream (an API root
// such as http://127.0.0.1:8080): httputil.ReverseProxy flushing at once,
// nothing else. What it adds over direct is the floor any Go proxy pays on
// the machine (a second loopback hop, the server and transport of
// net/http), which native mode is measured against. Its transport keeps
// as many idle connections to the upstream as rcm's does: with
// DefaultTransport's 2, the throughput phase's 8 connections would redial
// on most calls.
func Bare(upstream *url.URL) http.Handler {
	p := httputil.NewSingleHostReverseProxy(upstream)
	p.FlushInterval = -1
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	p.Transport = tr
	return p
}
