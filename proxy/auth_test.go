package proxy

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

const testToken = "0123456789abcdef-token"

func TestExposureNeedsToken(t *testing.T) {
	cases := []struct {
		listen, token string
		ok            bool
	}{
		{"127.0.0.1:8787", "", true},
		{"127.0.0.2:8787", "", true},
		{"[::1]:8787", "", true},
		{"localhost:8787", "", true},
		{"0.0.0.0:8787", "", false},
		{":8787", "", false},
		{"[::]:8787", "", false},
		{"192.168.1.5:8787", "", false},
		{"rcm.internal:8787", "", false},
		{"0.0.0.0:8787", "short", false},
		{"127.0.0.1:8787", "short", false},
		{"0.0.0.0:8787", testToken, true},
	}
	for _, c := range cases {
		cfg := Config{Listen: c.listen, AuthToken: c.token, DB: "x.db"}
		err := cfg.Validate()
		if (err == nil) != c.ok {
			t.Errorf("listen %s token %q: err %v, want ok=%v", c.listen, c.token, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "auth-token") {
			t.Errorf("listen %s: error %q does not say what to set", c.listen, err)
		}
	}
}

// get sends a GET with headers and the Host host ("" keeps the URL's).
func get(t *testing.T, url, host string, hdr http.Header) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header = hdr
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestAdminNeedsToken(t *testing.T) {
	srv, _ := setup(t, &recorder{}, func(c *Config) { c.AuthToken = testToken })
	for _, path := range []string{"/rcm/healthz", "/rcm/sessions", "/rcm/metrics", "/rcm/"} {
		for _, hdr := range []http.Header{
			{},
			{"Authorization": {"Bearer wrong-token-wrong-token"}},
			{"Authorization": {"Bearer " + testToken[:len(testToken)-1]}},
			{"Authorization": {testToken}},
		} {
			resp := get(t, srv.URL+path, "", hdr)
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s with %v: %d, want 401 with WWW-Authenticate", path, hdr, resp.StatusCode)
			}
		}
	}
	for _, hdr := range []http.Header{{"Authorization": {"Bearer " + testToken}}, {HeaderAuth: {testToken}}} {
		// A DNS name is fine once a token guards rcm.
		if resp := get(t, srv.URL+"/rcm/healthz", "rcm.internal:8787", hdr); resp.StatusCode != 200 {
			t.Errorf("healthz with %v: %d", hdr, resp.StatusCode)
		}
	}
}

func TestProxiedCallsNeedTokenWithUpstreamKey(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, func(c *Config) { c.AuthToken = testToken; c.UpstreamKey = "sk-operator" })
	body, h, path := load(t, "continue_request")
	h.Del("Authorization")
	for _, hdr := range []http.Header{{}, {"Authorization": {"Bearer " + testToken}}, {HeaderAuth: {"nope"}}} {
		hh := h.Clone()
		for k, v := range hdr {
			hh[k] = v
		}
		rcmError(t, post(t, srv.URL+path, body, hh), http.StatusUnauthorized, "unauthorized")
	}
	if len(rec.reqs) != 0 {
		t.Fatalf("upstream saw %d unauthenticated calls on the operator's key", len(rec.reqs))
	}
	h.Set(HeaderAuth, testToken)
	resp := post(t, srv.URL+path, body, h)
	io.Copy(io.Discard, resp.Body)
	_, req := rec.last(t)
	if resp.StatusCode != 200 || req.Header.Get(HeaderAuth) != "" || req.Header.Get("Authorization") != "Bearer sk-operator" {
		t.Fatalf("status %d; upstream headers %v", resp.StatusCode, req.Header)
	}

	// Without --upstream-key the client's own key is the credential.
	rec2 := &recorder{}
	srv2, _ := setup(t, rec2, func(c *Config) { c.AuthToken = testToken })
	h.Del(HeaderAuth)
	h.Set("Authorization", "Bearer sk-client")
	resp = post(t, srv2.URL+path, body, h)
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("client with its own key: %d", resp.StatusCode)
	}
}

// TestHostAndOrigin: without a token, /rcm/ (and proxied calls on the
// operator's key) answer only loopback names and IP addresses, and never a
// page of another origin: DNS rebinding and cross-site requests are refused.
func TestHostAndOrigin(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, func(c *Config) { c.UpstreamKey = "sk-operator" })
	addr := strings.TrimPrefix(srv.URL, "http://")
	cases := []struct {
		host, origin string
		status       int
	}{
		{"", "", 200},
		{"localhost:8787", "", 200},
		{"[::1]:8787", "", 200},
		{"evil.example:8787", "", 403},
		{"127.0.0.1.nip.io", "", 403},
		{"", "http://evil.example", 403},
		{"", "null", 403},
		{"", "http://" + addr, 200},
	}
	for _, c := range cases {
		hdr := http.Header{}
		if c.origin != "" {
			hdr.Set("Origin", c.origin)
		}
		if resp := get(t, srv.URL+"/rcm/sessions", c.host, hdr); resp.StatusCode != c.status {
			t.Errorf("/rcm/ Host %q Origin %q: %d, want %d", c.host, c.origin, resp.StatusCode, c.status)
		}
		body, h, path := load(t, "continue_request")
		h.Del("Authorization")
		for k, v := range hdr {
			h[k] = v
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(string(body)))
		req.Header = h
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || c.status == 403 && gjson.GetBytes(got, "error.code").String() == "" {
			t.Errorf("proxied Host %q Origin %q: %d %s, want %d", c.host, c.origin, resp.StatusCode, got, c.status)
		}
	}
}

// TestDerivedSessionsPerCredential: two clients who send the same first
// request without a session header get different sessions, and neither
// credential is stored.
func TestDerivedSessionsPerCredential(t *testing.T) {
	rec := &recorder{}
	srv, h := setup(t, rec, nil)
	body, hdr, path := load(t, "continue_request")
	for _, name := range sessionHeaders {
		hdr.Del(name)
	}
	ids := map[string]string{}
	for _, key := range []string{"sk-alice-0123456789", "sk-bob-0123456789", "sk-alice-0123456789"} {
		hh := hdr.Clone()
		hh.Set("Authorization", "Bearer "+key)
		resp := post(t, srv.URL+path, body, hh)
		io.Copy(io.Discard, resp.Body)
		id := resp.Header.Get(HeaderSession)
		if !strings.HasPrefix(id, "drv_") {
			t.Fatalf("session %q, want a derived id", id)
		}
		if prev, ok := ids[key]; ok && prev != id {
			t.Errorf("%s: session %s then %s; want it stable", key, prev, id)
		}
		ids[key] = id
	}
	if ids["sk-alice-0123456789"] == ids["sk-bob-0123456789"] {
		t.Fatalf("two credentials share the derived session %s", ids["sk-bob-0123456789"])
	}
	h.after.Wait()
	db, err := os.ReadFile(h.cfg.DB)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(db), "sk-alice") || strings.Contains(string(db), "sk-bob") {
		t.Fatal("a client credential is in the store")
	}
}

// TestPageLogin: the inspector page, which cannot send headers, is opened
// once with ?token=; the token moves into a strict cookie that its own
// calls carry, and out of the URL.
func TestPageLogin(t *testing.T) {
	srv, _ := setup(t, &recorder{}, func(c *Config) { c.AuthToken = testToken })
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(url string, cookie *http.Cookie) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := do(srv.URL+"/rcm/?token=wrong-token-wrong-token", nil); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Fatalf("wrong token: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	resp := do(srv.URL+"/rcm/?session=ses_a&token="+testToken, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/rcm/?session=ses_a" {
		t.Fatalf("login: %d to %q, want 303 to /rcm/?session=ses_a", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == cookieAuth {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/rcm/" {
		t.Fatalf("cookie %+v", cookie)
	}
	if resp := do(srv.URL+"/rcm/sessions", cookie); resp.StatusCode != 200 {
		t.Fatalf("sessions with the cookie: %d", resp.StatusCode)
	}
	if resp := do(srv.URL+"/rcm/sessions", &http.Cookie{Name: cookieAuth, Value: "wrong-token-wrong-token"}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("sessions with a wrong cookie: %d", resp.StatusCode)
	}
}
