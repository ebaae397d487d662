package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// body builds a chat request: a system prompt, then alternating messages
// given as role:text ("user:hi", "tool:ok").
func body(stream, includeUsage bool, msgs ...string) []byte {
	type msg struct {
		Role       string `json:"role"`
		Content    string `json:"content"`
		ToolCallID string `json:"tool_call_id,omitempty"`
	}
	req := map[string]any{"model": "m1", "stream": stream}
	if includeUsage {
		req["stream_options"] = map[string]any{"include_usage": true}
	}
	ms := []msg{{Role: "system", Content: "You are a test agent.\n<env>\n  Working directory: /w/repo\n</env>"}}
	for _, m := range msgs {
		role, text, _ := strings.Cut(m, ":")
		ms = append(ms, msg{Role: role, Content: text})
		if role == "tool" {
			ms[len(ms)-1].ToolCallID = "c1"
		}
	}
	req["messages"] = ms
	b, _ := json.Marshal(req)
	return b
}

func post(t *testing.T, url string, b []byte, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func serve(t *testing.T, s Script) (*Server, string) {
	t.Helper()
	srv := New(s)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts.URL
}

var twoCalls = Reply{
	Text: "Let me look at the files — ünïcödé included, then edit.",
	ToolCalls: []ToolCall{
		{ID: "call_a", Name: "bash", Arguments: `{"command":"ls -la && cat README.md","description":"List files"}`},
		{Name: "read", Arguments: `{"filePath":"{{workdir}}/main.go"}`},
	},
	Usage: &Usage{Prompt: 120, Completion: 30},
}

func TestStreamShape(t *testing.T) {
	for _, includeUsage := range []bool{true, false} {
		_, url := serve(t, Script{Default: twoCalls})
		resp := post(t, url, body(true, includeUsage, "user:hi"))
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		a := assemble(t, readEvents(t, resp.Body))
		want := []ToolCall{
			{ID: "call_a", Name: "bash", Arguments: twoCalls.ToolCalls[0].Arguments},
			{ID: "call_1_1", Name: "read", Arguments: `{"filePath":"/w/repo/main.go"}`},
		}
		if a.role != "assistant" || a.text != twoCalls.Text || !reflect.DeepEqual(a.calls, want) || a.finish != "tool_calls" || !a.done {
			t.Fatalf("include_usage=%v: assembled %+v", includeUsage, a)
		}
		if a.events < 10 {
			t.Errorf("only %d events: text and arguments should arrive in fragments", a.events)
		}
		switch {
		case includeUsage && (a.usage == nil || *a.usage != *twoCalls.Usage || !a.usageLast):
			t.Errorf("usage chunk %+v, want %+v with a consistent total", a.usage, twoCalls.Usage)
		case !includeUsage && a.usage != nil:
			t.Errorf("usage chunk %+v sent without include_usage", a.usage)
		}
	}
}

func TestStreamTextOnlyFinishesStop(t *testing.T) {
	_, url := serve(t, Script{Default: Reply{Text: "done"}})
	a := assemble(t, readEvents(t, post(t, url, body(true, true, "user:hi")).Body))
	if a.text != "done" || a.finish != "stop" || len(a.calls) != 0 || a.usage == nil || a.usage.Prompt == 0 || a.usage.Completion != 1 {
		t.Fatalf("assembled %+v (usage %+v)", a, a.usage)
	}
}

// TestGoOpenAIClient reads both shapes with a real SDK.
func TestGoOpenAIClient(t *testing.T) {
	_, url := serve(t, Script{Default: twoCalls})
	cfg := openai.DefaultConfig("x")
	cfg.BaseURL = url + "/v1"
	client := openai.NewClientWithConfig(cfg)
	req := openai.ChatCompletionRequest{
		Model:         "m1",
		Messages:      []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}},
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	}
	stream, err := client.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var text string
	var calls []openai.ToolCall
	var finish openai.FinishReason
	var usage *openai.Usage
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage != nil {
			usage = resp.Usage
		}
		for _, c := range resp.Choices {
			text += c.Delta.Content
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
			for _, tc := range c.Delta.ToolCalls {
				if *tc.Index == len(calls) {
					calls = append(calls, tc)
				} else {
					calls[*tc.Index].Function.Arguments += tc.Function.Arguments
				}
			}
		}
	}
	if text != twoCalls.Text || finish != openai.FinishReasonToolCalls || len(calls) != 2 ||
		calls[0].Function.Arguments != twoCalls.ToolCalls[0].Arguments || usage == nil || usage.TotalTokens != 150 {
		t.Fatalf("stream: text %q finish %q calls %+v usage %+v", text, finish, calls, usage)
	}

	resp, err := client.CreateChatCompletion(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	m := resp.Choices[0].Message
	if resp.Object != "chat.completion" || m.Content != twoCalls.Text || len(m.ToolCalls) != 2 ||
		m.ToolCalls[1].Function.Name != "read" || m.ToolCalls[1].Type != openai.ToolTypeFunction ||
		resp.Choices[0].FinishReason != openai.FinishReasonToolCalls || resp.Usage.PromptTokens != 120 {
		t.Fatalf("non-stream: %+v", resp)
	}
}

func TestNonStreamShape(t *testing.T) {
	_, url := serve(t, Script{Models: []string{"m9"}, Default: Reply{ToolCalls: []ToolCall{{Name: "glob"}}}})
	b := body(false, false, "user:hi")
	b = bytes.Replace(b, []byte(`"model":"m1",`), nil, 1)
	resp := post(t, url, b)
	raw, _ := io.ReadAll(resp.Body)
	var got struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Role      string          `json:"role"`
				Content   json.RawMessage `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%v: %s", err, raw)
	}
	m := got.Choices[0].Message
	if got.Object != "chat.completion" || got.Model != "m9" || m.Role != "assistant" || string(m.Content) != "" && string(m.Content) != "null" ||
		len(m.ToolCalls) != 1 || m.ToolCalls[0].Type != "function" || m.ToolCalls[0].Function.Arguments != "{}" ||
		m.ToolCalls[0].ID == "" || got.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("response %s", raw)
	}
	if got.Usage.PromptTokens != (len(b)+3)/4 || got.Usage.TotalTokens != got.Usage.PromptTokens+got.Usage.CompletionTokens {
		t.Errorf("estimated usage %+v for a %d-byte body", got.Usage, len(b))
	}
}

func TestErrorReplies(t *testing.T) {
	tests := []struct {
		name   string
		reply  Reply
		stream bool
		status int
		body   string // substring of the response body
	}{
		{"default body", Reply{Status: 500}, true, 500, `"type":"server_error"`},
		{"client error type", Reply{Status: 400}, false, 400, `"type":"invalid_request_error"`},
		{"verbatim body", Reply{Status: 429, ErrorBody: `{"error":{"message":"slow down"}}`}, true, 429, `{"error":{"message":"slow down"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := serve(t, Script{Default: tt.reply})
			resp := post(t, url, body(tt.stream, true, "user:hi"))
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(raw), tt.body) || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, body %s", resp.StatusCode, raw)
			}
			if tt.reply.ErrorBody != "" && string(raw) != tt.reply.ErrorBody {
				t.Errorf("body %q, want verbatim %q", raw, tt.reply.ErrorBody)
			}
		})
	}
}

func TestRulesOrderAndTimes(t *testing.T) {
	srv, url := serve(t, Script{
		Rules: []Rule{
			{When: Match{Kind: "title"}, Reply: Reply{Text: "title"}},
			{When: Match{User: "fix"}, Reply: Reply{Text: "first"}, Times: 2},
			{When: Match{User: "fix"}, Reply: Reply{Text: "then"}},
		},
		Default: Reply{Text: "default"},
	})
	titleBody := body(false, false, "user:fix it")
	titleBody = bytes.Replace(titleBody, []byte("You are a test agent."), []byte("You are a title generator."), 1)
	steps := []struct {
		body []byte
		text string
		rule int
	}{
		{body(false, false, "user:fix it"), "first", 1},
		{titleBody, "title", 0},
		{body(false, false, "user:fix it"), "first", 1},
		{body(false, false, "user:fix it"), "then", 2},
		{body(false, false, "user:other"), "default", AnsweredByDefault},
	}
	for i, st := range steps {
		if got := text(t, post(t, url, st.body)); got != st.text {
			t.Errorf("step %d: %q, want %q", i, got, st.text)
		}
		if r := srv.Requests()[i]; r.Rule != st.rule {
			t.Errorf("step %d: recorded rule %d, want %d", i, r.Rule, st.rule)
		}
	}
	srv.Reset()
	if got := text(t, post(t, url, body(false, false, "user:fix it"))); got != "first" || len(srv.Requests()) != 1 {
		t.Errorf("after Reset: %q with %d recorded; Times not restored", got, len(srv.Requests()))
	}
}

func text(t *testing.T, resp *http.Response) string {
	t.Helper()
	var out struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	return out.Choices[0].Message.Content
}

func TestMatchFields(t *testing.T) {
	tests := []struct {
		name   string
		when   Match
		msgs   []string
		header []string
		want   bool
	}{
		{"empty matches all", Match{}, []string{"user:x"}, nil, true},
		{"user substring", Match{User: "bug"}, []string{"user:fix the bug"}, nil, true},
		{"last user only", Match{User: "bug"}, []string{"user:fix the bug", "assistant:ok", "user:thanks"}, nil, false},
		{"tool result", Match{Tool: "PASS"}, []string{"user:run", "assistant:", "tool:3 PASS"}, nil, true},
		{"tool of an earlier turn", Match{Tool: "PASS"}, []string{"user:run", "assistant:", "tool:PASS", "assistant:ok", "user:next"}, nil, false},
		{"last tool result", Match{Tool: "PASS"}, []string{"user:run", "assistant:", "tool:PASS", "assistant:", "tool:FAIL"}, nil, false},
		{"system", Match{System: "test agent"}, []string{"user:x"}, nil, true},
		{"system absent", Match{System: "title generator"}, []string{"user:x"}, nil, false},
		{"kind agent", Match{Kind: "agent"}, []string{"user:x"}, nil, true},
		{"kind subagent", Match{Kind: "subagent"}, []string{"user:x"}, []string{"X-Parent-Session-Id", "ses_p"}, true},
		{"last role user", Match{Last: "user"}, []string{"user:x", "assistant:", "tool:y"}, nil, false},
		{"last role tool", Match{Last: "tool"}, []string{"user:x", "assistant:", "tool:y"}, nil, true},
		{"session", Match{Session: "ses_a"}, []string{"user:x"}, []string{"x-session-id", "ses_a"}, true},
		{"other session", Match{Session: "ses_a"}, []string{"user:x"}, []string{"x-session-id", "ses_b"}, false},
		{"all fields must hold", Match{User: "x", Last: "tool"}, []string{"user:x"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := serve(t, Script{Rules: []Rule{{When: tt.when, Reply: Reply{Text: "hit"}}}})
			if got := text(t, post(t, url, body(false, false, tt.msgs...), tt.header...)) == "hit"; got != tt.want {
				t.Fatalf("matched %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQueuePerSession(t *testing.T) {
	srv, url := serve(t, Script{Rules: []Rule{{When: Match{Kind: "title"}, Reply: Reply{Text: "title"}}}, Default: Reply{Text: "rules"}})
	srv.Enqueue("s1", Reply{Text: "s1-a"}, Reply{Text: "s1-b"})
	srv.Enqueue("", Reply{Text: "any"})
	titleBody := bytes.Replace(body(false, false, "user:x"), []byte("You are a test agent."), []byte("You are a title generator."), 1)
	steps := []struct {
		session string
		body    []byte
		want    string
	}{
		{"s2", body(false, false, "user:x"), "any"},
		{"s1", titleBody, "title"},
		{"s1", body(false, false, "user:x"), "s1-a"},
		{"s1", body(false, false, "user:x"), "s1-b"},
		{"s1", body(false, false, "user:x"), "rules"},
	}
	for i, st := range steps {
		if got := text(t, post(t, url, st.body, "x-session-id", st.session)); got != st.want {
			t.Errorf("step %d (%s): %q, want %q", i, st.session, got, st.want)
		}
	}
	if n := srv.Pending("s1") + srv.Pending(""); n != 0 {
		t.Errorf("%d replies still queued", n)
	}
	if rs := srv.Session("s1"); len(rs) != 4 || rs[0].Kind != "title" || rs[1].Rule != AnsweredByQueue || rs[3].Rule != AnsweredByDefault {
		t.Errorf("session s1 records %+v", rs)
	}
}

func TestRecordingIsByteExact(t *testing.T) {
	srv, url := serve(t, Script{Models: []string{"m1", "m2"}})
	weird := []byte("{ \"model\" : \"m1\",\n\t\"messages\":[{\"role\":\"user\",\"content\":\"caf\\u00e9 ✓\"}] , \"x\": 1e3 }")
	post(t, url, weird, "x-session-id", "ses_1", "Authorization", "Bearer k")
	resp, err := http.Get(url + "/v1/models?limit=2")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if list.Object != "list" || len(list.Data) != 2 || list.Data[1].ID != "m2" || list.Data[0].Object != "model" {
		t.Errorf("models %+v", list)
	}
	post(t, url, []byte("not json"))
	rs := srv.Requests()
	if len(rs) != 3 {
		t.Fatalf("%d recorded", len(rs))
	}
	if !bytes.Equal(rs[0].Body, weird) || rs[0].Method != "POST" || rs[0].Path != "/v1/chat/completions" ||
		rs[0].Header.Get("Authorization") != "Bearer k" || rs[0].Session != "ses_1" || rs[0].Kind != "agent" {
		t.Errorf("chat record %+v", rs[0])
	}
	if rs[1].Method != "GET" || rs[1].Path != "/v1/models" || rs[1].Query != "limit=2" || rs[1].Rule != NotAnswered {
		t.Errorf("models record %+v", rs[1])
	}
	if string(rs[2].Body) != "not json" || rs[2].Rule != NotAnswered {
		t.Errorf("bad body record %+v", rs[2])
	}
	if len(srv.Session("ses_1")) != 1 {
		t.Errorf("session ses_1: %+v", srv.Session("ses_1"))
	}
}

func TestBadRequests(t *testing.T) {
	_, url := serve(t, Script{})
	tests := []struct {
		method, path string
		body         string
		status       int
	}{
		{"POST", "/v1/chat/completions", "{", 400},
		{"GET", "/v1/chat/completions", "", 405},
		{"POST", "/v1/models", "", 405},
		{"POST", "/v1/embeddings", "{}", 404},
		{"POST", "/chat/completions", `{"messages":"no"}`, 200}, // no /v1, no messages array: answered
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, url+tt.path, strings.NewReader(tt.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || tt.status != 200 && !strings.Contains(string(raw), `"error":{"message":"scripted: `) {
			t.Errorf("%s %s: %d %s", tt.method, tt.path, resp.StatusCode, raw)
		}
	}
}

// watch wraps a server so that a test learns when ServeHTTP has returned.
func watch(t *testing.T, s *Server) (url string, returned <-chan struct{}) {
	t.Helper()
	done := make(chan struct{}, 16)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r)
		done <- struct{}{}
	}))
	t.Cleanup(ts.Close)
	return ts.URL, done
}

func TestClientCancelEndsHandler(t *testing.T) {
	tests := []struct {
		name      string
		reply     Reply
		stream    bool
		firstByte bool // the client sees the first event before cancelling
	}{
		{"hang stream", Reply{Hang: true, Text: "never"}, true, true},
		{"hang non-stream", Reply{Hang: true}, false, false},
		{"chunk delay", Reply{Text: "a long answer in pieces", ChunkDelay: time.Hour}, true, true},
		{"delay", Reply{Text: "late", Delay: time.Hour}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := New(Script{Default: tt.reply})
			url, returned := watch(t, srv)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(body(tt.stream, true, "user:x")))
			var resp *http.Response
			var err error
			if tt.firstByte || tt.reply.Hang {
				if resp, err = http.DefaultClient.Do(req); err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
			}
			if tt.firstByte {
				line, _ := bufioLine(resp.Body)
				if !strings.HasPrefix(line, "data: {") || !strings.Contains(line, `"role":"assistant"`) {
					t.Fatalf("first event %q", line)
				}
			}
			if resp == nil {
				go func() {
					if resp, err := http.DefaultClient.Do(req); err == nil {
						resp.Body.Close()
					}
				}()
				for len(srv.Requests()) == 0 { // cancel only once the handler has the call
					time.Sleep(time.Millisecond)
				}
			}
			cancel()
			select {
			case <-returned:
			case <-time.After(10 * time.Second):
				t.Fatal("handler still running 10 s after the client went away")
			}
		})
	}
}

// bufioLine reads one line without buffering past it.
func bufioLine(r io.Reader) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for {
		if _, err := r.Read(one); err != nil {
			return string(b), err
		}
		if one[0] == '\n' {
			return string(b), nil
		}
		b = append(b, one[0])
	}
}

func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- New(Script{Default: Reply{Text: "up"}}).Serve(ctx, ln) }()
	if got := text(t, post(t, "http://"+ln.Addr().String(), body(false, false, "user:x"))); got != "up" {
		t.Fatalf("answered %q", got)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
