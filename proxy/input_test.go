package proxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/tidwall/gjson"
)

// rcmError checks that resp is rcm's own OpenAI-shaped error with code.
func rcmError(t *testing.T, resp *http.Response, status int, code string) string {
	t.Helper()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status || gjson.GetBytes(got, "error.code").String() != code || gjson.GetBytes(got, "error.message").String() == "" {
		t.Errorf("got %d %s, want %d with an OpenAI-shaped error %q", resp.StatusCode, got, status, code)
	}
	return string(got)
}

func TestThresholdChecks(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, nil)
	body, h, path := load(t, "continue_request")
	for _, v := range []string{"NaN", "nan", "0x1p-1", "", "Inf", "+Inf", "1e-1", "-0.5", "1.5", "0", "0.5.1", "0.5,0.6"} {
		hh := h.Clone()
		hh[http.CanonicalHeaderKey(HeaderThreshold)] = []string{v}
		rcmError(t, post(t, srv.URL+path, body, hh), http.StatusBadRequest, "bad_threshold")
	}
	for _, v := range []string{"0.5", "1", ".9", "0.800"} {
		hh := h.Clone()
		hh.Set(HeaderThreshold, v)
		resp := post(t, srv.URL+path, body, hh)
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			t.Errorf("threshold %q: status %d", v, resp.StatusCode)
		}
	}
	if len(rec.reqs) != 4 {
		t.Errorf("upstream saw %d calls, want the 4 valid ones", len(rec.reqs))
	}
}

func TestSessionIDChecks(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, nil)
	body, h, path := load(t, "continue_request")
	bad := []struct{ name, v string }{
		{HeaderSession, strings.Repeat("a", 60<<10)},
		{HeaderSession, strings.Repeat("a", maxSessionID+1)},
		{HeaderSession, "a b"},
		{HeaderSession, ""},
		{"X-Session-Id", "a\\b"},
		{"X-Session-Id", "a;b"},
		{"X-Session-Affinity", "é"},
	}
	for _, c := range bad {
		hh := h.Clone()
		hh[http.CanonicalHeaderKey(c.name)] = []string{c.v}
		msg := rcmError(t, post(t, srv.URL+path, body, hh), http.StatusBadRequest, "bad_session")
		if len(msg) > 400 {
			t.Errorf("%s of %d bytes echoed whole: %d-byte error", c.name, len(c.v), len(msg))
		}
	}
	hh := h.Clone()
	hh.Set(HeaderSession, "ses_OK-1.2:/@+="+strings.Repeat("x", maxSessionID-15))
	resp := post(t, srv.URL+path, body, hh)
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get(HeaderSession) != hh.Get(HeaderSession) {
		t.Errorf("valid session: %d %q", resp.StatusCode, resp.Header.Get(HeaderSession))
	}
	if len(rec.reqs) != 1 {
		t.Errorf("upstream saw %d calls, want 1", len(rec.reqs))
	}
}

// TestMalformedChunkedBodyIs400: an unreadable request body is the
// client's fault (400), not an unreachable upstream (502).
func TestMalformedChunkedBodyIs400(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, nil)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"mod\r\nzz\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rcmError(t, resp, http.StatusBadRequest, "bad_body")
	if len(rec.reqs) != 0 {
		t.Error("an unreadable body was forwarded")
	}
}

func compress(tb testing.TB, enc string, b []byte) []byte {
	var buf bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "zstd":
		zw, err := zstd.NewWriter(&buf)
		if err != nil {
			tb.Fatal(err)
		}
		w = zw
	}
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// TestCompressedBodies: a compressed request is decoded, routed like the
// plain one and forwarded plain, with a length that fits.
func TestCompressedBodies(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, func(c *Config) { c.Mode = Router })
	plain := sessionBody(t, []string{"fix the parser in /work/a", "add docs to /work/b"}, []string{"/work/a", "/work/b"})
	resp := post(t, srv.URL+"/v1/chat/completions", plain, http.Header{HeaderSession: {"plain"}})
	io.Copy(io.Discard, resp.Body)
	want, _ := rec.last(t)
	wantTask := resp.Header.Get(HeaderTask)
	if len(want) >= len(plain) || wantTask == "" {
		t.Fatalf("plain body not routed: %d of %d bytes, task %q", len(want), len(plain), wantTask)
	}
	for _, enc := range []string{"gzip", "deflate", "zstd"} {
		z := compress(t, enc, plain)
		resp := post(t, srv.URL+"/v1/chat/completions", z, http.Header{HeaderSession: {enc}, "Content-Encoding": {enc}})
		io.Copy(io.Discard, resp.Body)
		got, req := rec.last(t)
		if resp.StatusCode != 200 || resp.Header.Get(HeaderFallback) != FallbackNone || resp.Header.Get(HeaderTask) != wantTask {
			t.Errorf("%s: %d fallback %q task %q", enc, resp.StatusCode, resp.Header.Get(HeaderFallback), resp.Header.Get(HeaderTask))
		}
		if !bytes.Equal(got, want) || req.Header.Get("Content-Encoding") != "" || req.ContentLength != int64(len(got)) {
			t.Errorf("%s: upstream got %d bytes, Content-Encoding %q, length %d; want the plain routed %d bytes",
				enc, len(got), req.Header.Get("Content-Encoding"), req.ContentLength, len(want))
		}
	}
}

// TestCompressionBombs: a body that decodes past --max-body gets 413,
// however small it is on the wire; an unknown encoding gets 415; a corrupt
// stream 400.
func TestCompressionBombs(t *testing.T) {
	rec := &recorder{}
	srv, _ := setup(t, rec, func(c *Config) { c.MaxBody = 1 << 20 })
	bomb := bytes.Repeat([]byte{'a'}, 64<<20)
	for _, enc := range []string{"gzip", "deflate", "zstd"} {
		z := compress(t, enc, bomb)
		if len(z) > 1<<20 {
			t.Fatalf("%s bomb is %d bytes on the wire", enc, len(z))
		}
		rcmError(t, post(t, srv.URL+"/v1/chat/completions", z, http.Header{"Content-Encoding": {enc}}), http.StatusRequestEntityTooLarge, "body_too_large")
		small := compress(t, enc, []byte(`{"model":"m","messages":[{"role":"user","content":"hello there"}]}`))
		rcmError(t, post(t, srv.URL+"/v1/chat/completions", small[:len(small)-6], http.Header{"Content-Encoding": {enc}}), http.StatusBadRequest, "bad_body")
	}
	rcmError(t, post(t, srv.URL+"/v1/chat/completions", []byte("{}"), http.Header{"Content-Encoding": {"br"}}), http.StatusUnsupportedMediaType, "unsupported_encoding")
	if len(rec.reqs) != 0 {
		t.Errorf("upstream saw %d calls", len(rec.reqs))
	}
}

// FuzzReadBody: any body under any supported encoding is read without a
// panic, never past the limit, and a plain one as sent.
func FuzzReadBody(f *testing.F) {
	encs := []string{"", "gzip", "deflate", "zstd", "br"}
	for i, enc := range encs[1:4] {
		f.Add(uint8(i+1), compress(f, enc, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)))
		f.Add(uint8(i+1), compress(f, enc, bytes.Repeat([]byte("a"), 1<<16)))
	}
	f.Add(uint8(0), []byte(`{"model":"m"}`))
	const limit = 4096
	f.Fuzz(func(t *testing.T, e uint8, data []byte) {
		enc := encs[int(e)%len(encs)]
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(data))
		if enc != "" {
			r.Header.Set("Content-Encoding", enc)
		}
		body, err := readBody(httptest.NewRecorder(), r, limit)
		if err == nil && len(body) > limit {
			t.Fatalf("%s: %d bytes read past the limit", enc, len(body))
		}
		if enc == "" && len(data) <= limit && (err != nil || !bytes.Equal(body, data)) {
			t.Fatalf("plain body changed: %v", err)
		}
	})
}

// FuzzRequestHeaders: what the threshold and session checks accept is what
// they promise.
func FuzzRequestHeaders(f *testing.F) {
	for _, s := range []string{"0.5", "NaN", "0x1p-1", "1", "", "ses_01", strings.Repeat("a", 300), "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if th, err := ParseThreshold(v); err == nil && !(th > 0 && th <= 1) {
			t.Fatalf("threshold %q accepted as %v", v, th)
		}
		if err := checkSession(http.Header{"X-Session-Id": {v}}); err == nil &&
			(v == "" || len(v) > maxSessionID || strings.IndexFunc(v, badSessionRune) >= 0) {
			t.Fatalf("session %q accepted", v)
		}
	})
}
