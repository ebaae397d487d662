package compaction

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rcm-dev/rcm/transcript"
)

var update = flag.Bool("update", false, "rewrite golden files")

const captures = "../testdata/opencode"

// capture loads the body of a real OpenCode request.
func capture(t testing.TB, name string) []byte {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(captures, name+".body.json"))
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func parse(t testing.TB, body []byte) *transcript.Transcript {
	t.Helper()
	tr, err := transcript.Parse(transcript.OpenAIChat, body, nil)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return tr
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from golden file:\ngot:\n%s", name, got)
	}
}

// msg is one chat message of a synthetic body.
type msg struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCalls  []call `json:"tool_calls,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

type call struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func toolCall(id, name, args string) call {
	c := call{ID: id, Type: "function"}
	c.Function.Name, c.Function.Arguments = name, args
	return c
}

// chatBody builds a compact chat-completions body with tools and options
// around the messages, as OpenCode sends it.
func chatBody(t testing.TB, ms []msg) []byte {
	t.Helper()
	b, err := json.Marshal(struct {
		Model    string `json:"model"`
		Messages []msg  `json:"messages"`
		Tools    []any  `json:"tools"`
		Stream   bool   `json:"stream"`
	}{"m1", ms, []any{map[string]any{"type": "function", "function": map[string]any{"name": "bash"}}}, true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func editWith(keep []int, replace map[int][]byte) transcript.Edit {
	return transcript.Edit{Keep: keep, Replace: replace}
}
