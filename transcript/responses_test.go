package transcript

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/tidwall/gjson"
)

// responsesCaptures are every Codex capture that carries a body (HTTP
// requests and WebSocket frames) and OpenCode's Responses call.
func responsesCaptures(t *testing.T) map[string]capture.Request {
	t.Helper()
	out := map[string]capture.Request{}
	for _, name := range capture.CodexNames(t) {
		if r := capture.Codex(t, name); r.Body != nil {
			out["codex_"+name] = r
		}
	}
	out["opencode_responses_api_request"] = capture.Load(t, "responses_api_request")
	if len(out) < 20 {
		t.Fatalf("found %d Responses captures", len(out))
	}
	return out
}

func TestResponsesGoldenCaptures(t *testing.T) {
	for name, r := range responsesCaptures(t) {
		t.Run(name, func(t *testing.T) {
			tr, err := Parse(OpenAIResponses, r.Body, OpenAIResponses.Hints(r.Header))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tr, r.Body, filepath.Join("testdata", "responses", name+".golden"))
			// Each item is its exact bytes in the input array.
			items := gjson.GetBytes(r.Body, "input").Array()
			if len(items) != len(tr.Messages) {
				t.Fatalf("%d messages for %d input items", len(tr.Messages), len(items))
			}
			for i, it := range items {
				if string(tr.Messages[i].Raw) != it.Raw {
					t.Errorf("message %d is not the item's bytes", i)
				}
			}
		})
	}
}

func TestResponsesKinds(t *testing.T) {
	want := map[string]Kind{
		"codex_first_agent_request":               Agent,
		"codex_tool_result_request":               Agent,
		"codex_resume_last_request":               Agent,
		"codex_resume_by_id_request":              Agent,
		"codex_classic_tools_first_request":       Agent,
		"codex_classic_tools_tool_result_request": Agent,
		"codex_unknown_model_first_request":       Agent,
		"codex_tui_first_request":                 Agent,
		"codex_after_compaction_request":          Agent,
		"codex_after_remote_compaction_ws_frame":  Agent,
		"codex_ws_frame_first_turn":               Agent,
		"codex_ws_frame_tool_result":              Agent,
		"codex_ws_frame_resume_turn":              Agent,
		"codex_compaction_inline_request":         Compaction,
		"codex_compaction_manual_tui_request":     Compaction,
		"codex_title_request":                     Title,
		"codex_ws_frame_prewarm":                  Prewarm,
		"codex_remote_compaction_v2_ws_frame":     RemoteCompaction,
		"codex_remote_compaction_v2_http_request": RemoteCompaction,
		"opencode_responses_api_request":          Agent,
	}
	caps := responsesCaptures(t)
	if len(want) != len(caps) {
		t.Errorf("%d kinds for %d captures", len(want), len(caps))
	}
	for name, r := range caps {
		tr, err := Parse(OpenAIResponses, r.Body, OpenAIResponses.Hints(r.Header))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tr.Kind != want[name] {
			t.Errorf("%s: kind %s, want %s", name, tr.Kind, want[name])
		}
	}
}

// Without the turn-metadata header (a frame, or another harness) the
// prompts still tell the kind.
func TestResponsesKindsFromPrompts(t *testing.T) {
	for name, kind := range map[string]Kind{
		"compaction_inline_request": Compaction,
		"title_request":             Title,
		"first_agent_request":       Agent,
	} {
		r := capture.Codex(t, name)
		tr, err := Parse(OpenAIResponses, r.Body, Hints{})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Kind != kind {
			t.Errorf("%s without headers: kind %s, want %s", name, tr.Kind, kind)
		}
	}
	for body, kind := range map[string]Kind{
		`{"instructions":"You are a title generator. ...","input":"fix the bug"}`: Title,
		`{"input":[{"role":"user","content":"x"}],"generate":false}`:              Prewarm,
		`{"input":"x"}`: Agent,
	} {
		tr, err := Parse(OpenAIResponses, []byte(body), Hints{})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Kind != kind {
			t.Errorf("%s: kind %s, want %s", body, tr.Kind, kind)
		}
	}
}

func TestResponsesItems(t *testing.T) {
	body := `{"model":"m","instructions":"be brief","input":[` +
		`{"type":"additional_tools","role":"developer","tools":[]},` +
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"base"}]},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context><cwd>/w</cwd></environment_context>"}]},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"task one"}]},` +
		`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA\u003d=="},` +
		`{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},` +
		`{"type":"function_call_output","call_id":"c1","output":"a.go"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]},` +
		`{"role":"user","content":"task two"},` +
		`{"type":"custom_tool_call","call_id":"c2","name":"exec","input":"text(1)"},` +
		`{"type":"custom_tool_call_output","call_id":"c2","output":[{"type":"input_text","text":"1"}]},` +
		`{"type":"compaction","id":"cmp_1","encrypted_content":"opaque"},` +
		`{"type":"web_search_call","id":"ws_1"}` +
		`],"tools":[],"future_field":{"x":1}}`
	tr, err := Parse(OpenAIResponses, []byte(body), Hints{})
	if err != nil {
		t.Fatal(err)
	}
	roles := make([]string, len(tr.Messages))
	for i, m := range tr.Messages {
		roles[i] = m.Role
	}
	wantRoles := "developer developer developer user assistant assistant tool assistant user assistant tool developer assistant"
	if got := strings.Join(roles, " "); got != wantRoles {
		t.Errorf("roles\n got %s\nwant %s", got, wantRoles)
	}
	if tr.Preamble != 3 || len(tr.Turns) != 2 || tr.Turns[0] != (Turn{Request, 3, 8}) || tr.Turns[1] != (Turn{Request, 8, 13}) {
		t.Fatalf("preamble %d turns %+v", tr.Preamble, tr.Turns)
	}
	if c := tr.Messages[5].ToolCalls; len(c) != 1 || c[0] != (ToolCall{"c1", "exec_command", `{"cmd":"ls"}`}) {
		t.Errorf("function_call: %+v", c)
	}
	if c := tr.Messages[9].ToolCalls; len(c) != 1 || c[0] != (ToolCall{"c2", "exec", "text(1)"}) {
		t.Errorf("custom_tool_call: %+v", c)
	}
	if tr.Messages[6].ToolCallID != "c1" || tr.Messages[6].Text() != "a.go" || tr.Messages[10].ToolCallID != "c2" || tr.Messages[10].Text() != "1" {
		t.Errorf("outputs: %+v %+v", tr.Messages[6], tr.Messages[10])
	}
	if tr.Messages[4].Text() != "" || tr.Messages[11].Text() != "" {
		t.Error("reasoning or compaction items have text")
	}
	// Routing away task one keeps the preamble, the compaction item (every
	// task's) and task two, each item byte-exact; every other field too.
	out, err := tr.Rebuild(Edit{Keep: tr.Keep([]int{1})})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(body,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"task one"}]},`+
			`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA\u003d=="},`+
			`{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},`+
			`{"type":"function_call_output","call_id":"c1","output":"a.go"},`+
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]},`, "", 1)
	if string(out) != want {
		t.Errorf("rebuilt\n%s\nwant\n%s", out, want)
	}
	// Task one's turn keeps its reasoning item byte for byte.
	out, err = tr.Rebuild(Edit{Keep: tr.Keep([]int{0})})
	if err != nil || !strings.Contains(string(out), `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA\u003d=="},{"type":"function_call"`) {
		t.Errorf("reasoning not kept with its turn: %s (%v)", out, err)
	}
}

func TestResponsesStringInput(t *testing.T) {
	body := []byte(`{"model":"m","input":"fix \"it\"","prompt_cache_key":"k1"}`)
	tr, err := Parse(OpenAIResponses, body, Hints{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Turns) != 1 || tr.Messages[0].Text() != `fix "it"` || tr.SessionKey != "k1" {
		t.Fatalf("turns %+v text %q key %q", tr.Turns, tr.Messages[0].Text(), tr.SessionKey)
	}
	if out, _ := tr.Rebuild(Edit{Keep: []int{0}}); !bytes.Equal(out, body) {
		t.Errorf("unchanged rebuild: %s", out)
	}
	out, err := tr.Rebuild(Edit{Keep: []int{0}, Insert: []Insert{{Before: 0, Raw: []byte(`{"role":"user","content":"rec"}`)}}})
	want := `{"model":"m","input":[{"role":"user","content":"rec"},{"role":"user","content":"fix \"it\""}],"prompt_cache_key":"k1"}`
	if err != nil || string(out) != want {
		t.Errorf("rebuilt %s (%v), want %s", out, err, want)
	}
}

func TestResponsesErrors(t *testing.T) {
	for body, want := range map[string]error{
		`nope`:                           ErrNotJSON,
		`[1]`:                            ErrNotObject,
		`{"model":"m"}`:                  ErrNoMessages,
		`{"input":3}`:                    ErrNoMessages,
		`{"input":[1]}`:                  ErrBadMessage,
		`{"input":[{"content":"x"}]}`:    ErrBadMessage,
		`{"input":[{"type":"message"}]}`: ErrBadMessage,
	} {
		if _, err := Parse(OpenAIResponses, []byte(body), Hints{}); err != want {
			t.Errorf("%s: err %v, want %v", body, err, want)
		}
	}
}

// FuzzResponses: any body parses or fails cleanly; a parsed one rebuilds
// to itself with every turn kept, and to valid JSON with any turn dropped
// and a message inserted.
func FuzzResponses(f *testing.F) {
	for _, name := range []string{"tool_result_request", "ws_frame_tool_result", "remote_compaction_v2_ws_frame", "after_compaction_request", "classic_tools_tool_result_request"} {
		f.Add(capture.Codex(f, name).Body)
	}
	f.Add(capture.Body(f, "responses_api_request"))
	f.Add([]byte(`{"input":"x"}`))
	f.Add([]byte(`{"input":[{"role":"user","content":"a"},{"type":"reasoning"},{"role":"user","content":"b"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, err := Parse(OpenAIResponses, body, Hints{})
		if err != nil {
			return
		}
		out, err := tr.Rebuild(Edit{Keep: tr.Keep(allTurns(tr))})
		if err != nil || !bytes.Equal(out, body) {
			t.Fatalf("rebuild with all kept changed the body (err %v)", err)
		}
		tr.Fingerprints()
		for _, m := range tr.Messages {
			m.Text()
		}
		if len(tr.Turns) == 0 {
			return
		}
		keep := tr.Keep([]int{len(tr.Turns) - 1})
		out, err = tr.Rebuild(Edit{Keep: keep, Insert: []Insert{{Before: tr.Turns[len(tr.Turns)-1].Start, Raw: []byte(`{"role":"user","content":"m"}`)}}})
		if err != nil || !gjson.ValidBytes(out) || !gjson.GetBytes(out, "input").IsArray() {
			t.Fatalf("rebuild: %v\n%s", err, out)
		}
	})
}

func TestResponsesReply(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Message
	}{
		{"fake_reply_custom_tool_call.sse.txt", NewMessage("assistant", "", []ToolCall{{"call_00000000000315632f6c188f", "exec", "const r = await tools.exec_command({cmd: \"echo hello-from-codex > hi.txt\"});\ntext(r);\n"}})},
		{"fake_reply_function_call.sse.txt", NewMessage("assistant", "", nil)},
	} {
		body, err := os.ReadFile(filepath.Join(capture.CodexDir(), tc.file))
		if err != nil {
			t.Fatal(err)
		}
		m, ok := OpenAIResponses.ParseReply(body, true)
		if !ok || len(m.ToolCalls) != 1 {
			t.Fatalf("%s: %+v %v", tc.file, m, ok)
		}
		if tc.want.ToolCalls != nil && m.ToolCalls[0] != tc.want.ToolCalls[0] {
			t.Errorf("%s: %+v", tc.file, m.ToolCalls)
		}
		// Cut before response.completed: the items done so far.
		cut := body[:bytes.Index(body, []byte("event: response.completed"))]
		if m2, ok := OpenAIResponses.ParseReply(cut, true); !ok || m2.ToolCalls[0] != m.ToolCalls[0] {
			t.Errorf("%s cut: %+v", tc.file, m2)
		}
	}
	obj := `{"id":"resp_1","object":"response","output":[{"type":"reasoning","id":"rs"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}]}`
	if m, ok := OpenAIResponses.ParseReply([]byte(obj), false); !ok || m.Text() != "hi" {
		t.Errorf("response object: %+v", m)
	}
}

func TestReadResponsesEvent(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(capture.CodexDir(), "fake_reply_compaction_item.ws.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var last ResponsesEvent
	for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
		ev, ok := ReadResponsesEvent(line)
		if !ok || strings.Contains(string(line), `"response": {`) != (ev.ID == "resp_000000000011c1f1b6134f2d") {
			t.Fatalf("event %s: %+v %v", line, ev, ok)
		}
		last = ev
	}
	if !last.Done || len(last.Output) != 1 || gjson.GetBytes(last.Output[0], "type").Str != "compaction" || last.Usage.Input != 50000 {
		t.Errorf("completed: %+v", last)
	}
	if _, ok := ReadResponsesEvent([]byte(`{"choices":[]}`)); ok {
		t.Error("a chat chunk read as a Responses event")
	}
}

func TestResponsesSummaries(t *testing.T) {
	r := capture.Codex(t, "after_compaction_request")
	tr, err := Parse(OpenAIResponses, r.Body, OpenAIResponses.Hints(r.Header))
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Summaries(); len(got) != 1 || got[0] != len(tr.Messages)-1 {
		t.Errorf("summaries %v, want the last item", got)
	}
	r = capture.Codex(t, "resume_by_id_request")
	if tr, _ = Parse(OpenAIResponses, r.Body, OpenAIResponses.Hints(r.Header)); len(tr.Summaries()) != 0 {
		t.Errorf("summaries in a call without compaction: %v", tr.Summaries())
	}
}

// TestCodexRepos: every Codex capture of a turn (recorded in a git
// repository, /home/user/project) lists it in its turn metadata; the title
// call and the prewarm frame list none; OpenCode's call has no Codex
// metadata.
func TestCodexRepos(t *testing.T) {
	for name, r := range responsesCaptures(t) {
		tr, err := Parse(OpenAIResponses, r.Body, OpenAIResponses.Hints(r.Header))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		roots, ok := tr.CodexRepos()
		want := []string{"/home/user/project"}
		switch name {
		case "codex_title_request", "codex_ws_frame_prewarm":
			want = nil
		case "opencode_responses_api_request":
			if ok || roots != nil {
				t.Errorf("%s: %v %v, want no metadata", name, roots, ok)
			}
			continue
		}
		if !ok || strings.Join(roots, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %v %v, want %v", name, roots, ok, want)
		}
	}
}

// TestChatCodexContext: Codex on the chat wire (a provider's wire_api
// "chat"), after a compaction: its environment context and summary are
// developer messages, kept with every turn and opening none, and the
// summary is one of Summaries, as on the Responses wire.
func TestChatCodexContext(t *testing.T) {
	body := []byte(`{"model":"m","messages":[
{"role":"system","content":"You are Codex."},
{"role":"user","content":"<environment_context>\n  <cwd>/home/user/project</cwd>\n</environment_context>"},
{"role":"user","content":"Fix the date parser."},
{"role":"user","content":"Another language model started to solve this problem and produced a summary of its thinking process.\nThe parser is fixed."},
{"role":"user","content":"Now add an LRU cache."}]}`)
	tr, err := Parse(OpenAIChat, body, Hints{})
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range tr.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, " "); got != "system developer user developer user" {
		t.Errorf("roles %s", got)
	}
	if len(tr.Turns) != 2 || tr.Turns[0].Kind != Request || tr.Turns[1].Kind != Request || tr.Messages[tr.Turns[1].Start].Text() != "Now add an LRU cache." {
		t.Errorf("turns %+v", tr.Turns)
	}
	if got := tr.Summaries(); len(got) != 1 || got[0] != 3 {
		t.Errorf("summaries %v, want [3]", got)
	}
	if kept := tr.Keep([]int{1}); !slices.Contains(kept, 3) || !slices.Contains(kept, 1) || slices.Contains(kept, 2) {
		t.Errorf("keeping the last turn keeps %v", kept)
	}
}
