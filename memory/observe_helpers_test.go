package memory

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/transcript"
)

// miniSWE reads a real mini-swe-agent trajectory converted to OpenCode
// messages (native bash tool calls) by the bench's importer, from its golden
// file (the bench's tests check that it equals the current conversion).
func miniSWE(t testing.TB, name string) *chat.Trajectory {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".trajectory.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr chat.Trajectory
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	return &tr
}

// sessionCalls lays a trajectory out as the model calls of one session,
// as a harness sends them: a system prompt, each turn's request, and the
// turn's messages; a call ends before each assistant message, which is its
// answer (returned as a chat.completion object).
func sessionCalls(t testing.TB, tr *chat.Trajectory) (bodies [][]byte, replies [][]byte) {
	t.Helper()
	for _, c := range chat.Lay("You are opencode.", tr.Turns).Calls {
		if c.Response.Role == "" {
			continue // a turn with no recorded answer
		}
		bodies = append(bodies, chattest.Body(c.Messages...))
		replies = append(replies, completion(t, c.Response))
	}
	return bodies, replies
}

// completion is m as a chat.completion answer.
func completion(t testing.TB, m chat.Message) []byte {
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
