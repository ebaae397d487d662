package scripted

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadScript(t *testing.T) {
	s, err := LoadScript(strings.NewReader(`{
	  "models": ["m1", "m2"],
	  "rules": [
	    {"when": {"user": "fix", "kind": "agent", "last": "user", "session": "s", "system": "x", "tool": "y"},
	     "reply": {"text": "t", "tool_calls": [
	        {"id": "c1", "name": "edit", "arguments": {"filePath": "{{workdir}}/a.go",  "n": [1, 2]}},
	        {"name": "bash", "arguments": "{\"command\":\"go test\"}"},
	        {"name": "glob"}],
	       "delay": "250ms", "chunk_delay": "1ms", "usage": {"prompt": 5, "completion": 6}, "hang": true},
	     "times": 2},
	    {"reply": {"status": 503, "error": "busy"}}
	  ],
	  "default": {"text": "ok"},
	  "hold": "2s"
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Script{
		Models: []string{"m1", "m2"},
		Rules: []Rule{
			{
				When: Match{User: "fix", Kind: "agent", Last: "user", Session: "s", System: "x", Tool: "y"},
				Reply: Reply{
					Text: "t",
					ToolCalls: []ToolCall{
						{ID: "c1", Name: "edit", Arguments: `{"filePath":"{{workdir}}/a.go","n":[1,2]}`},
						{Name: "bash", Arguments: `{"command":"go test"}`},
						{Name: "glob"},
					},
					Delay: 250 * time.Millisecond, ChunkDelay: time.Millisecond,
					Usage: &Usage{Prompt: 5, Completion: 6}, Hang: true,
				},
				Times: 2,
			},
			{Reply: Reply{Status: 503, ErrorBody: "busy"}},
		},
		Default: Reply{Text: "ok"},
		Hold:    2 * time.Second,
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("loaded\n%+v\nwant\n%+v", s, want)
	}
}

func TestLoadScriptErrors(t *testing.T) {
	tests := []struct {
		name, script string
		want         []string // substrings of the error
	}{
		{"not JSON", `{`, []string{"script:"}},
		{"empty", ``, []string{"script: want a JSON object"}},
		{"null", `null`, []string{"script: want a JSON object"}},
		{"null rule", `{"rules": [{}, null]}`, []string{"rule 1: want a JSON object"}},
		{"trailing data", `{} {}`, []string{"trailing data"}},
		{"unknown top-level key", `{"rule": []}`, []string{"script:", `"rule"`}},
		{"unknown rule key", `{"rules": [{"reply": {}}, {"reply": {"txt": "x"}}]}`, []string{"rule 1", `"txt"`}},
		{"unknown match key", `{"rules": [{"when": {"usr": "x"}}]}`, []string{"rule 0", `"usr"`}},
		{"wrong type", `{"rules": [{"reply": {"status": "500"}}]}`, []string{"rule 0: reply:", "status"}},
		{"bad kind", `{"rules": [{}, {}, {"when": {"kind": "titel"}}]}`, []string{"rule 2", "when.kind", `"titel"`, "title"}},
		{"bad last", `{"rules": [{"when": {"last": "system"}}]}`, []string{"rule 0", "when.last"}},
		{"negative times", `{"rules": [{"times": -1}]}`, []string{"rule 0", "times"}},
		{"bad delay", `{"rules": [{"reply": {"delay": "soon"}}]}`, []string{"rule 0", "reply.delay"}},
		{"negative chunk delay", `{"rules": [{"reply": {"chunk_delay": "-1s"}}]}`, []string{"rule 0", "reply.chunk_delay"}},
		{"bad status", `{"rules": [{"reply": {"status": 99}}]}`, []string{"rule 0", "reply.status"}},
		{"error on success", `{"rules": [{"reply": {"error": "x"}}]}`, []string{"rule 0", "reply.error"}},
		{"unnamed tool", `{"rules": [{"reply": {"tool_calls": [{"name": "a"}, {"arguments": {}}]}}]}`, []string{"rule 0", "reply.tool_calls[1].name"}},
		{"arguments array", `{"rules": [{"reply": {"tool_calls": [{"name": "a", "arguments": [1]}]}}]}`, []string{"rule 0", "reply.tool_calls[0].arguments"}},
		{"negative usage", `{"rules": [{"reply": {"usage": {"prompt": -1}}}]}`, []string{"rule 0", "reply.usage"}},
		{"bad default", `{"default": {"delay": "1 hour"}}`, []string{"default.delay"}},
		{"unknown default key", `{"default": {"texts": "x"}}`, []string{"default", `"texts"`}},
		{"bad hold", `{"hold": "a while"}`, []string{"script", "hold"}},
		{"negative hold", `{"hold": "-1s"}`, []string{"hold", "negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadScript(strings.NewReader(tt.script))
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLoadScriptFile(t *testing.T) {
	if _, err := LoadScriptFile(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"rules": [{"when": {"kind": "x"}}]}`), 0o600)
	if _, err := LoadScriptFile(bad); err == nil || !strings.Contains(err.Error(), "bad.json") || !strings.Contains(err.Error(), "rule 0") {
		t.Errorf("bad file: %v", err)
	}
}

func TestNewPanicsOnInvalidScript(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "rule 0: when.kind") {
			t.Errorf("recovered %v", r)
		}
	}()
	New(Script{Rules: []Rule{{When: Match{Kind: "Title"}}}})
}

func TestWorkdirEscapedInArguments(t *testing.T) {
	_, url := serve(t, Script{Default: Reply{
		Text:      "in {{workdir}}",
		ToolCalls: []ToolCall{{Name: "write", Arguments: `{"filePath":"{{workdir}}/a"}`}},
	}})
	b := bytes.Replace(body(true, false, "user:x"), []byte("/w/repo"), []byte(`/w/my \"odd\" repo`), 1)
	a := assemble(t, readEvents(t, post(t, url, b).Body))
	if a.text != `in /w/my "odd" repo` || a.calls[0].Arguments != `{"filePath":"/w/my \"odd\" repo/a"}` {
		t.Fatalf("assembled %+v", a)
	}
	// Without a working directory in the prompt the template stays visible.
	b = bytes.Replace(body(true, false, "user:x"), []byte("Working directory"), []byte("Somewhere"), 1)
	if a = assemble(t, readEvents(t, post(t, url, b).Body)); a.text != "in {{workdir}}" {
		t.Fatalf("without workdir: %q", a.text)
	}
}

func FuzzLoadScript(f *testing.F) {
	for _, name := range []string{"opencode_script.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"rules": [{"when": {"kind": "title"}, "reply": {"tool_calls": [{"name": "a", "arguments": {"x": 1}}], "delay": "1ms"}, "times": 1}]}`))
	f.Add([]byte(`{"default": null, "rules": null}`))
	f.Add([]byte(`{"rules": [{"reply": {"tool_calls": [{"name": "a", "arguments": "not json"}]}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := LoadScript(bytes.NewReader(b))
		if err != nil {
			return
		}
		// Whatever loads is valid and serves a call without panicking.
		for i := range s.Rules {
			s.Rules[i].Reply.Delay, s.Rules[i].Reply.ChunkDelay, s.Rules[i].Reply.Hang = 0, 0, false
		}
		s.Default.Delay, s.Default.ChunkDelay, s.Default.Hang = 0, 0, false
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body(true, true, "user:x")))
		New(s).ServeHTTP(w, req)
	})
}

// FuzzChat feeds arbitrary request bodies to the chat endpoint: a client
// error or an answer, never a panic.
func FuzzChat(f *testing.F) {
	// A small capture: large seeds make the fuzzer's minimisation crawl.
	f.Add([]byte(loadCapture(f, "title_request.json").Body))
	f.Add(body(false, false, "user:x", "assistant:", "tool:y"))
	f.Add([]byte(`{"messages": [{"role": 1}], "stream": "yes"}`))
	s := New(Script{Rules: []Rule{{When: Match{Tool: "y"}, Reply: Reply{Text: "{{workdir}}", ToolCalls: []ToolCall{{Name: "a", Arguments: `"{{workdir}}"`}}}}}})
	f.Fuzz(func(t *testing.T, b []byte) {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(b)))
		if w.Code != 200 && w.Code != 400 {
			t.Fatalf("status %d", w.Code)
		}
		s.Reset()
	})
}
