package transcript

import (
	"net/http"
	"testing"
)

// TestHints: OpenCode marks its subagents by their parent's session id in
// every format (its Anthropic provider too), Claude Code by its agent id on
// Messages; only an agent call becomes a Subagent one.
func TestHints(t *testing.T) {
	parent := http.Header{"X-Parent-Session-Id": {"ses_p"}}
	agent := http.Header{"X-Claude-Code-Agent-Id": {"a1"}}
	turn := http.Header{"X-Codex-Turn-Metadata": {`{"request_kind":"compaction"}`}}
	for _, c := range []struct {
		f    Format
		h    http.Header
		want Hints
	}{
		{OpenAIChat, nil, Hints{}},
		{OpenAIChat, parent, Hints{Subagent: true}},
		{OpenAIChat, agent, Hints{}},
		{OpenAIResponses, parent, Hints{Subagent: true}},
		{OpenAIResponses, turn, Hints{CodexTurn: `{"request_kind":"compaction"}`}},
		{AnthropicMessages, agent, Hints{Subagent: true}},
		{AnthropicMessages, parent, Hints{Subagent: true}},
	} {
		if got := c.f.Hints(c.h); got != c.want {
			t.Errorf("%s %v: %+v, want %+v", c.f, c.h, got, c.want)
		}
	}
	for _, c := range []struct {
		f    Format
		body string
		h    Hints
		want Kind
	}{
		{OpenAIChat, `{"messages":[{"role":"user","content":"fix it"}]}`, Hints{}, Agent},
		{OpenAIChat, `{"messages":[{"role":"user","content":"fix it"}]}`, Hints{Subagent: true}, Subagent},
		{OpenAIChat, `{"messages":[{"role":"system","content":"You are a title generator. x"},{"role":"user","content":"fix it"}]}`, Hints{Subagent: true}, Title},
		{AnthropicMessages, `{"messages":[{"role":"user","content":"fix it"}]}`, Hints{Subagent: true}, Subagent},
		{OpenAIResponses, `{"input":"fix it"}`, Hints{Subagent: true}, Subagent},
		{OpenAIResponses, `{"input":"fix it"}`, Hints{CodexTurn: `{"request_kind":"compaction"}`}, Compaction},
		{OpenAIResponses, `{"input":"fix it","client_metadata":{"x-codex-turn-metadata":"{\"request_kind\":\"turn\"}"}}`, Hints{CodexTurn: `{"request_kind":"compaction"}`}, Agent},
	} {
		tr, err := Parse(c.f, []byte(c.body), c.h)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Kind != c.want {
			t.Errorf("%s %s %+v: kind %s, want %s", c.f, c.body, c.h, tr.Kind, c.want)
		}
	}
}
