package memory

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeOpenAI serves /v1/chat/completions with handle, after checking the
// request is one go-openai chat call with the summarizer's key.
func fakeOpenAI(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, req chatRequest)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
			t.Errorf("Authorization %q", got)
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("request body: %v", err)
		}
		handle(w, r, req)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

func answer(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
	})
}

func TestSummarize(t *testing.T) {
	r := renderRecord()
	url := fakeOpenAI(t, func(w http.ResponseWriter, _ *http.Request, req chatRequest) {
		if req.Model != "small" || len(req.Messages) != 2 || req.Messages[0].Role != "system" {
			t.Errorf("request %+v", req)
		}
		user := req.Messages[len(req.Messages)-1].Content
		if !strings.Contains(user, "Fix the off-by-one in parse.go.") || !strings.Contains(user, "RECENT-TAIL") {
			t.Errorf("user message lacks the record or the recent text:\n%s", user)
		}
		if strings.Contains(user, r.Summary) {
			t.Error("the old summary was sent to be summarised again")
		}
		if strings.Contains(user, "OLD-HEAD") {
			t.Error("recent text was not cut to its tail")
		}
		answer(w, "  Progress: parser fixed\nUnfinished: empty input  \n")
	})
	s := &Summarizer{Model: "small", BaseURL: url, APIKey: "sk-test"}
	recent := "OLD-HEAD" + strings.Repeat("x", maxSummaryRecent) + "RECENT-TAIL"
	got, err := s.Summarize(context.Background(), r, recent)
	if err != nil || got != "Progress: parser fixed\nUnfinished: empty input" {
		t.Errorf("Summarize = %q, %v", got, err)
	}
}

func TestSummarizeFailures(t *testing.T) {
	for _, c := range []struct {
		name   string
		handle func(w http.ResponseWriter, r *http.Request, req chatRequest)
	}{
		{"500", func(w http.ResponseWriter, _ *http.Request, _ chatRequest) {
			http.Error(w, `{"error":{"message":"boom","type":"server_error"}}`, http.StatusInternalServerError)
		}},
		{"garbage", func(w http.ResponseWriter, _ *http.Request, _ chatRequest) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("<html>not json"))
		}},
		{"no choices", func(w http.ResponseWriter, _ *http.Request, _ chatRequest) {
			w.Write([]byte(`{"id":"x","choices":[]}`))
		}},
		{"empty answer", func(w http.ResponseWriter, _ *http.Request, _ chatRequest) { answer(w, "  \n") }},
		{"timeout", func(w http.ResponseWriter, r *http.Request, _ chatRequest) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}},
	} {
		s := &Summarizer{Model: "m", BaseURL: fakeOpenAI(t, c.handle), APIKey: "sk-test", Timeout: 200 * time.Millisecond}
		got, err := s.Summarize(context.Background(), renderRecord(), "")
		if err == nil || got != "" {
			t.Errorf("%s: Summarize = %q, %v; want an error", c.name, got, err)
		}
		if c.name == "timeout" && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("timeout: error %v does not wrap context.DeadlineExceeded", err)
		}
	}
}

func TestSummarizerValidate(t *testing.T) {
	for _, s := range []Summarizer{{}, {Model: "m", Timeout: -1}, {Model: "m", BaseURL: "ftp://x"}, {Model: "m", BaseURL: "::"}} {
		if s.Validate() == nil {
			t.Errorf("%+v: Validate() = nil", s)
		}
		if _, err := s.Summarize(context.Background(), Record{}, ""); err == nil {
			t.Errorf("%+v: Summarize ran", s)
		}
	}
	if err := (&Summarizer{Model: "m"}).Validate(); err != nil {
		t.Errorf("zero defaults: %v", err)
	}
}
