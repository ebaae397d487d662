package memory

import (
	"encoding/json"
	opencodecapture "github.com/rcm-dev/rcm/internal/capture"
	"os"
	"path/filepath"
	"testing"

	"github.com/rcm-dev/rcm/bench"
	"github.com/rcm-dev/rcm/transcript"
)

// sharedData is the team's corpus of real trajectories, read in place.
const sharedData = "../../shared/data"

// parseBody parses an OpenAI chat body.
func parseBody(t testing.TB, body []byte) *transcript.Transcript {
	t.Helper()
	tr, err := transcript.Parse(transcript.OpenAIChat, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// capture reads a real OpenCode request body from testdata.
func capture(t testing.TB, name string) []byte {
	t.Helper()
	return opencodecapture.Load(t, name).Body
}

// chatBody builds an OpenAI chat body from bench messages.
func chatBody(t testing.TB, ms []bench.Message) []byte {
	t.Helper()
	b, err := json.Marshal(struct {
		Model    string          `json:"model"`
		Messages []bench.Message `json:"messages"`
		Stream   bool            `json:"stream"`
	}{"m1", ms, true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// miniSWE reads a real mini-swe-agent trajectory converted to OpenCode
// messages (native bash tool calls), skipping when the corpus is absent.
func miniSWE(t testing.TB, name string) *bench.Trajectory {
	t.Helper()
	p := filepath.Join(sharedData, "trajectories", "mini-swe-agent", name+".traj.json")
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		t.Skipf("%s absent: the shared trajectory corpus is not checked out here", p)
	}
	if err != nil {
		t.Fatal(err)
	}
	tr, _, err := bench.ReadMiniSWE(b, p)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// sessionCalls lays a trajectory out as the model calls of one session,
// as a harness sends them: a system prompt, each turn's request, and the
// turn's messages; a call ends before each assistant message, which is its
// answer (returned as a chat.completion object).
func sessionCalls(t testing.TB, tr *bench.Trajectory) (bodies [][]byte, replies [][]byte) {
	t.Helper()
	ms := []bench.Message{{Role: bench.RoleSystem, Content: "You are opencode."}}
	for _, turn := range tr.Turns {
		ms = append(ms, bench.Message{Role: bench.RoleUser, Content: turn.Request})
		for _, m := range turn.Messages {
			if m.Role == bench.RoleAssistant {
				bodies = append(bodies, chatBody(t, ms))
				replies = append(replies, completion(t, m))
			}
			ms = append(ms, m)
		}
	}
	return bodies, replies
}

// completion is m as a chat.completion answer.
func completion(t testing.TB, m bench.Message) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "message": m, "finish_reason": "stop"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// allTurns returns 0..n-1.
func allTurns(tr *transcript.Transcript) []int {
	out := make([]int, len(tr.Turns))
	for i := range out {
		out[i] = i
	}
	return out
}
