package transcript

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/tidwall/gjson"
)

// wsFrames reads the recorded WebSocket connection: every text frame with
// its direction, in order.
func wsFrames(tb testing.TB) (frames [][]byte, fromClient []bool) {
	f, err := os.Open(filepath.Join(capture.CodexDir(), "ws_transcript.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := gjson.ParseBytes(sc.Bytes())
		if l.Get("kind").Str != "text-frame" {
			continue
		}
		frames = append(frames, []byte(l.Get("data").Raw))
		fromClient = append(fromClient, l.Get("dir").Str == "client->server")
	}
	if len(frames) < 20 {
		tb.Fatalf("%d frames in the transcript", len(frames))
	}
	return frames, fromClient
}

// jsonItems decodes an input array for comparison by value (the fake
// server's output items and Codex's echo of them differ in key order).
func jsonItems(tb testing.TB, arr string) []any {
	var v []any
	if err := json.Unmarshal([]byte(arr), &v); err != nil {
		tb.Fatal(err)
	}
	for _, it := range v {
		delete(it.(map[string]any), "status") // Codex echoes it or not
	}
	return v
}

// TestConversationReplay replays Codex's recorded connection (prewarm,
// turn, tool output sent alone with previous_response_id) through a
// Conversation: each expanded frame has no previous_response_id and the
// full input, and the tool-output frame expands to the history Codex
// itself sends when it starts over (the resume frame on a new connection).
func TestConversationReplay(t *testing.T) {
	frames, client := wsFrames(t)
	var c Conversation
	var expanded [][]byte
	for i, f := range frames {
		if !client[i] {
			if ev, ok := ReadResponsesEvent(f); ok && ev.Done {
				c.Complete(ev)
			}
			continue
		}
		out, err := c.Expand(f)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if gjson.GetBytes(out, "previous_response_id").Exists() {
			t.Fatalf("frame %d keeps previous_response_id", i)
		}
		for _, k := range []string{"model", "tools", "reasoning", "client_metadata", "prompt_cache_key", "type", "text", "include"} {
			if gjson.GetBytes(out, k).Raw != gjson.GetBytes(f, k).Raw {
				t.Fatalf("frame %d: %s changed", i, k)
			}
		}
		expanded = append(expanded, out)
	}
	if len(expanded) != 3 {
		t.Fatalf("%d client frames", len(expanded))
	}
	first := capture.Codex(t, "ws_frame_first_turn").Body
	if got, want := jsonItems(t, gjson.GetBytes(expanded[1], "input").Raw), jsonItems(t, gjson.GetBytes(first, "input").Raw); !reflect.DeepEqual(got, want) {
		t.Error("the first turn (after the empty prewarm) is not its own input")
	}
	resume := gjson.GetBytes(capture.Codex(t, "ws_frame_resume_turn").Body, "input").Array()
	got := jsonItems(t, gjson.GetBytes(expanded[2], "input").Raw)
	var raw []string
	for _, it := range resume[:min(len(got), len(resume))] {
		raw = append(raw, it.Raw)
	}
	want := jsonItems(t, "["+strings.Join(raw, ",")+"]")
	if len(got) != 9 || !reflect.DeepEqual(got, want) {
		t.Errorf("expanded tool-output frame: %d items, differs from the resume frame's history", len(got))
	}
	// Parsed, it is a turn with its tool call and output, as over HTTP.
	tr, err := Parse(OpenAIResponses, expanded[2], Hints{})
	if err != nil || len(tr.Turns) != 1 || tr.Messages[7].ToolCalls[0].ID != tr.Messages[8].ToolCallID {
		t.Fatalf("parsed: %v %+v", err, tr)
	}
}

func TestConversationUnknownResponse(t *testing.T) {
	var c Conversation
	if _, err := c.Expand([]byte(`{"type":"response.create","previous_response_id":"resp_x","input":[]}`)); !errors.Is(err, ErrUnknownResponse) {
		t.Fatalf("err %v", err)
	}
	// A failed response leaves the history where it was.
	c.Expand([]byte(`{"input":[{"role":"user","content":"a"}]}`))
	c.Complete(ResponsesEvent{Type: "response.completed", ID: "r1", Done: true, Output: [][]byte{[]byte(`{"type":"message","role":"assistant","content":[]}`)}})
	c.Expand([]byte(`{"previous_response_id":"r1","input":[{"role":"user","content":"b"}]}`))
	c.Complete(ResponsesEvent{Type: "response.failed", ID: "r2", Done: true})
	out, err := c.Expand([]byte(`{"previous_response_id":"r1","input":"c"}`))
	if err != nil || c.Last() != "r1" {
		t.Fatalf("%v last %q", err, c.Last())
	}
	if want := `{"input":[{"role":"user","content":"a"},{"type":"message","role":"assistant","content":[]},{"role":"user","content":"c"}]}`; string(out) != want {
		t.Errorf("got %s", out)
	}
}

// FuzzExpand: any frame and output expand or fail cleanly; an expanded
// frame is valid JSON whose input is the history then the frame's items,
// with no previous_response_id.
func FuzzExpand(f *testing.F) {
	f.Add(capture.Codex(f, "ws_frame_tool_result").Body, []byte(`{"type":"custom_tool_call","call_id":"c"}`))
	f.Add(capture.Codex(f, "ws_frame_prewarm").Body, []byte(`{}`))
	f.Add([]byte(`{"previous_response_id":"r1","input":"x"}`), []byte(`[1]`))
	f.Fuzz(func(t *testing.T, frame, output []byte) {
		var c Conversation
		c.Expand([]byte(`{"input":[{"role":"user","content":"a"}]}`))
		c.Complete(ResponsesEvent{Type: "response.completed", ID: "r1", Done: true, Output: [][]byte{[]byte(`{"x":1}`)}})
		before := c.Len()
		out, err := c.Expand(frame)
		if err != nil {
			return
		}
		r := gjson.ParseBytes(out)
		if !gjson.ValidBytes(out) || !r.Get("input").IsArray() || r.Get("previous_response_id").Exists() {
			t.Fatalf("expanded %q to %q", frame, out)
		}
		n := len(r.Get("input").Array())
		fresh := gjson.GetBytes(frame, "input")
		want := 1
		if fresh.IsArray() {
			want = len(fresh.Array())
		}
		if gjson.GetBytes(frame, "previous_response_id").Type == gjson.String {
			want += before
		}
		if n != want {
			t.Fatalf("%d items, want %d", n, want)
		}
		if gjson.ValidBytes(output) {
			c.Complete(ResponsesEvent{Type: "response.completed", ID: "r2", Done: true, Output: [][]byte{output}})
		}
	})
}
