package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// TestWebSocketPassesThrough: the Responses API's WebSocket mode is relayed
// both ways, with the path, credentials and mode prefix handled as for HTTP.
func TestWebSocketPassesThrough(t *testing.T) {
	seen := make(chan *http.Request, 2)
	up := websocket.Upgrader{}
	rec := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Clone(r.Context())
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			kind, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			c.WriteMessage(kind, append([]byte("echo: "), msg...))
		}
	})
	srv, _ := setup(t, rec, func(c *Config) { c.UpstreamKey = "sk-rcm" })
	for _, path := range []string{"/v1/responses", "/rcm/v1/responses"} {
		url := "ws" + strings.TrimPrefix(srv.URL, "http") + path
		c, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"X-Rcm-Mode": {"rcm"}})
		if err != nil {
			t.Fatalf("%s: dial: %v", path, err)
		}
		if resp.Header.Get(HeaderMode) != "rcm" {
			t.Errorf("%s: mode header %q", path, resp.Header.Get(HeaderMode))
		}
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"response.create"}`)); err != nil {
			t.Fatal(err)
		}
		_, msg, err := c.ReadMessage()
		if err != nil || string(msg) != `echo: {"type":"response.create"}` {
			t.Fatalf("%s: %q %v", path, msg, err)
		}
		c.Close()
		r := <-seen
		if r.URL.Path != "/v1/responses" || r.Header.Get("Authorization") != "Bearer sk-rcm" || r.Header.Get("X-Rcm-Mode") != "" {
			t.Fatalf("%s: upstream saw %s auth=%q mode=%q", path, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Rcm-Mode"))
		}
	}
}
