package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// serveConn serves rcm with cfg's client timeouts and dials it.
func serveConn(t *testing.T, cfg Config) net.Conn {
	t.Helper()
	up := httptest.NewServer(&recorder{})
	t.Cleanup(up.Close)
	cfg.Upstream = up.URL + "/v1"
	h, _, _ := newHandler(t, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := h.Server()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closed waits up to 5 s for the server to close c.
func closed(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	return err == nil // EOF: the server hung up; a deadline error: it did not
}

func TestIdleTimeoutClosesKeepAlive(t *testing.T) {
	c := serveConn(t, Config{IdleTimeout: 100 * time.Millisecond})
	fmt.Fprint(c, "GET /rcm/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if !closed(c) {
		t.Fatal("idle keep-alive connection still open")
	}
}

func TestReadHeaderTimeoutClosesSlowClient(t *testing.T) {
	c := serveConn(t, Config{ReadHeaderTimeout: 100 * time.Millisecond})
	fmt.Fprint(c, "GET /rcm/healthz HTTP/1.1\r\nHost: 127.")
	if !closed(c) {
		t.Fatal("a client that never finishes its headers holds the connection")
	}
}
