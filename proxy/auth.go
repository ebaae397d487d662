package proxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// HeaderAuth carries --auth-token on proxied calls, whose Authorization
// header is the client's credential for the upstream. rcm's own endpoints
// (/rcm/...) take the token as "Authorization: Bearer TOKEN" or this header.
const HeaderAuth = "X-RCM-Auth"

// cookieAuth carries the token for the inspector page, since a browser adds
// no header to a page load or an EventSource: opening /rcm/?token=TOKEN
// sets it (HttpOnly, SameSite=Strict) and drops the token from the URL.
const cookieAuth = "rcm_auth"

// guard decides whether r may reach rcm: admin calls (/rcm/...) always,
// proxied calls when --upstream-key is set (rcm must not relay strangers on
// the operator's key). A browser page of another origin is refused
// (Origin); without a token, so is a Host that is not a loopback name or
// an IP address (DNS rebinding needs a name); with a token, the token is
// required.
func (h *Handler) guard(r *http.Request, admin bool) *httpError {
	if !admin && h.cfg.UpstreamKey == "" {
		return nil
	}
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Host, r.Host) {
			return &httpError{http.StatusForbidden, "forbidden_origin", fmt.Errorf("requests from the web page %q are refused", o)}
		}
	}
	if h.token == nil {
		if !localHost(r.Host) {
			return &httpError{http.StatusForbidden, "forbidden_host",
				fmt.Errorf("Host %q is not localhost or an IP address (set --auth-token to serve other names)", r.Host)}
		}
		return nil
	}
	tok := r.Header.Get(HeaderAuth)
	if admin && tok == "" {
		tok = adminToken(r)
	}
	sum := sha256.Sum256([]byte(tok))
	if tok == "" || subtle.ConstantTimeCompare(sum[:], h.token) != 1 {
		how := HeaderAuth + " header"
		if admin {
			how = "Authorization: Bearer (or " + HeaderAuth + ")"
		}
		return &httpError{http.StatusUnauthorized, "unauthorized", fmt.Errorf("missing or wrong auth token: send --auth-token as %s", how)}
	}
	return nil
}

// adminToken is the token of a call to rcm's own endpoints given other than
// in X-RCM-Auth: Authorization: Bearer, the page's query or its cookie.
func adminToken(r *http.Request) string {
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return b
	}
	if q := r.URL.Query().Get("token"); q != "" {
		return q
	}
	if c, err := r.Cookie(cookieAuth); err == nil {
		return c.Value
	}
	return ""
}

// login answers a page opened with ?token= (already checked by guard):
// the token goes into a cookie the page's own calls carry, and the browser
// is sent to the same page without it, so that it stays out of history.
func login(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	tok := q.Get("token")
	if tok == "" {
		return false
	}
	http.SetCookie(w, &http.Cookie{Name: cookieAuth, Value: tok, Path: "/rcm/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil})
	q.Del("token")
	u := *r.URL
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
	return true
}

// localHost reports whether a Host header names this machine by a loopback
// name or any IP address: names a DNS rebinding attack cannot choose.
func localHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return host == "localhost" || strings.HasSuffix(host, ".localhost") || net.ParseIP(strings.Trim(host, "[]")) != nil
}

// minAuthToken is the shortest --auth-token accepted.
const minAuthToken = 16

// checkExposure refuses a listen address beyond loopback without a token:
// anyone who reaches the port could read every stored session at /rcm/
// and, with --upstream-key, spend that key.
func checkExposure(listen, token string) error {
	if token != "" && len(token) < minAuthToken {
		return fmt.Errorf("auth-token: %d characters; use at least %d (e.g. openssl rand -hex 32)", len(token), minAuthToken)
	}
	host, _, _ := net.SplitHostPort(listen)
	ip := net.ParseIP(host)
	if token == "" && !(strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()) {
		return errors.New("listen " + listen + " reaches beyond loopback: set --auth-token (RCM_AUTH_TOKEN), " +
			"or anyone who reaches the port reads every stored session at /rcm/ and, with --upstream-key, spends that key")
	}
	return nil
}
