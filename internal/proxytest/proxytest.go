package proxytest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/proxy"
)

// Serve starts rcm (default config: rcm mode) before upstream, with its
// store in a temporary directory. Cleanup ends its live streams, stops it
// and closes the store.
func Serve(tb testing.TB, upstream http.Handler) *httptest.Server {
	tb.Helper()
	up := httptest.NewServer(upstream)
	tb.Cleanup(up.Close)
	cfg := proxy.Config{Upstream: up.URL + "/v1", DB: filepath.Join(tb.TempDir(), "rcm.db")}
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	h, err := proxy.New(cfg, nil)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.RegisterOnShutdown(h.EndStreams)
	srv.Start()
	tb.Cleanup(func() { h.EndStreams(); srv.Close(); h.Close() })
	return srv
}

// Send posts body to url as a call of session, reads the whole answer and
// returns its headers; any status but 200 fails the test.
func Send(tb testing.TB, url, session, body string) http.Header {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("X-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s: %s", url, resp.Status)
	}
	return resp.Header
}
