package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/scripted"
)

// TestRouterCallsHeader: a call on which the router asked its model
// classifier says what that cost in X-RCM-Router-Calls (calls, errors,
// prompt and completion tokens, ms); a call without one has no header.
func TestRouterCallsHeader(t *testing.T) {
	up := scripted.New(scripted.Script{Rules: []scripted.Rule{{
		When:  scripted.Match{System: "You route the requests of a coding agent's session to tasks"},
		Reply: scripted.Reply{Text: `{"task": "t1", "confidence": 0.95}`, Usage: &scripted.Usage{Prompt: 120, Completion: 7}},
	}}, Default: scripted.Reply{Text: "ok"}})
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	body := sessionBody(t, switchRequests, switchDirs)
	for _, model := range []string{"classifier", ""} {
		cfg := Config{Upstream: upSrv.URL + "/v1", Mode: Router}
		if model != "" {
			cfg.RouterModel, cfg.RouterBaseURL = model, upSrv.URL+"/v1"
		}
		_, srv, _ := newHandler(t, cfg)
		// At threshold 1 the cheap signals' confidence is below it, so the
		// classifier is asked.
		resp := post(t, srv.URL+"/v1/chat/completions", body, http.Header{HeaderSession: {"s-" + model}, HeaderThreshold: {"1"}})
		io.Copy(io.Discard, resp.Body)
		got := resp.Header.Get(HeaderRouterCalls)
		f := strings.Fields(got)
		switch {
		case model == "" && got != "":
			t.Errorf("no classifier: %s %q", HeaderRouterCalls, got)
		case model != "" && (len(f) != 5 || f[0] != "1" || f[1] != "0" || f[2] != "120" || f[3] != "7"):
			t.Errorf("classifier: %s %q, want \"1 0 120 7 <ms>\"", HeaderRouterCalls, got)
		}
	}
}
