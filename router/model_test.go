package router

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/scripted"
)

// fakeOpenAI answers chat completions with content, after delay.
func fakeOpenAI(t *testing.T, content string, delay time.Duration, hits *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		var req struct {
			Model    string                     `json:"model"`
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("bad classifier request %s: %v", r.URL.Path, err)
		}
		if req.Model != "router-m" || len(req.Messages) != 2 || !strings.Contains(req.Messages[1].Content, `id "t2"`) {
			t.Errorf("classifier prompt lacks the tasks: %+v", req)
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		answer, _ := json.Marshal(content)
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":"router-m","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":9,"total_tokens":129}}`, answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestModelClassifier(t *testing.T) {
	ambiguous := turn("Please write a short summary of everything you changed today for the changelog.")
	for _, c := range []struct {
		name   string
		answer string
		delay  time.Duration
		last   []chat.Message
		task   string
		method string
		calls  int
		errors int
		routed bool
	}{
		{"good answer", `{"task": "t2", "confidence": 0.93}`, 0, ambiguous, "t2", MethodModel, 1, 0, true},
		{"fenced answer", "```json\n{\"task\": \"t1\", \"confidence\": 0.85}\n```", 0, ambiguous, "t1", MethodModel, 1, 0, true},
		{"new task", `{"task": "new", "confidence": 0.9}`, 0, ambiguous, "t3", MethodModel, 1, 0, true},
		{"unsure answer", `{"task": "t1", "confidence": 0.4}`, 0, ambiguous, "t1", MethodModel, 1, 0, false},
		{"bad JSON", `t2 I think`, 0, ambiguous, "", MethodScored, 1, 1, false},
		{"unknown task", `{"task": "t9", "confidence": 0.9}`, 0, ambiguous, "", MethodScored, 1, 1, false},
		{"no confidence", `{"task": "t1"}`, 0, ambiguous, "", MethodScored, 1, 1, false},
		{"timeout", `{"task": "t2", "confidence": 0.99}`, time.Second, ambiguous, "", MethodScored, 1, 1, false},
		{"cheap signal confident", `{"task": "t2", "confidence": 0.99}`, 0, turn("Back in /work/ws1: also handle four-digit years."), "t1", MethodWorkspace, 0, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var hits atomic.Int32
			srv := fakeOpenAI(t, c.answer, c.delay, &hits)
			r := mustNew(t, Config{Model: "router-m", BaseURL: srv.URL + "/v1", APIKey: "k", Timeout: 100 * time.Millisecond})
			p := route(t, r, threeTasks(t, c.last), nil, Options{})
			if c.task != "" && p.Current.Task != c.task {
				t.Errorf("task %q, want %q", p.Current.Task, c.task)
			}
			if p.Current.Method != c.method || p.Current.Routed != c.routed || p.Fallback == c.routed {
				t.Errorf("decision %+v fallback %v, want %s routed %v", p.Current, p.Fallback, c.method, c.routed)
			}
			u := p.Usage
			if u.Calls != c.calls || u.Errors != c.errors || int(hits.Load()) != c.calls {
				t.Errorf("usage %+v, %d hits; want %d calls %d errors", u, hits.Load(), c.calls, c.errors)
			}
			if c.calls == 1 && c.errors == 0 && (u.PromptTokens != 120 || u.CompletionTokens != 9 || u.Latency <= 0) {
				t.Errorf("usage not counted: %+v", u)
			}
			if c.errors > 0 && u.LastError == "" {
				t.Error("error not reported")
			}
		})
	}
}

// TestModelClassifierScripted asks the team's scripted upstream, the fake
// model the bench and the proxy tests use, as a real OpenAI-compatible
// endpoint.
func TestModelClassifierScripted(t *testing.T) {
	up := scripted.New(scripted.Script{Default: scripted.Reply{Text: `{"task": "t2", "confidence": 0.92}`}})
	srv := httptest.NewServer(up)
	defer srv.Close()
	r := mustNew(t, Config{Model: "router-m", BaseURL: srv.URL + "/v1", APIKey: "k", Timeout: 5 * time.Second})
	p := route(t, r, threeTasks(t, turn("Please write a short summary of everything you changed today for the changelog.")), nil, Options{})
	if p.Current.Task != "t2" || p.Current.Method != MethodModel || !p.Current.Routed || p.Usage.Calls != 1 || p.Usage.Errors != 0 {
		t.Fatalf("decision %+v usage %+v", p.Current, p.Usage)
	}
	rs := up.Requests()
	if len(rs) != 1 || rs[0].Header.Get("Authorization") != "Bearer k" {
		t.Fatalf("the scripted model saw %d requests", len(rs))
	}
	// Each open task's request and files are in the prompt.
	for _, want := range []string{"parse_http_date treats two-digit years", "django/utils/http.py", "django/contrib/admin/views/main.py"} {
		if !strings.Contains(string(rs[0].Body), want) {
			t.Errorf("the classifier's prompt lacks %q", want)
		}
	}
	// Without the model the same request falls back: the model resolved it.
	if p := route(t, mustNew(t, Config{}), threeTasks(t, turn("Please write a short summary of everything you changed today for the changelog.")), nil, Options{}); !p.Fallback {
		t.Fatalf("cheap signals alone are confident: %+v", p.Current)
	}
}
