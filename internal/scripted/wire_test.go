package scripted

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestReadCallOtherAPIs: what rules see of Messages and Responses bodies.
// A Messages user message's tool results come before its text; system
// prompts (the system field, role system entries, the Responses API's
// instructions and developer items) neither count as the last message nor
// as user text; tools are found in each API's shape, Codex's namespaces
// and additional_tools item included.
func TestReadCallOtherAPIs(t *testing.T) {
	cases := []struct {
		name string
		api  wire
		body string
		want Call
	}{
		{"messages request", wireMessages,
			`{"system":"You help.","tools":[{"name":"Bash"},{"name":"Agent"}],"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"RUN: ls"}]},{"role":"system","content":"env"}]}`,
			Call{Kind: "agent", User: "RUN: ls", System: "You help.\nenv", Last: "user", Tools: []string{"Bash", "Agent"}}},
		{"messages tool result", wireMessages,
			`{"messages":[{"role":"user","content":"RUN: ls"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a.txt"}]}]}]}`,
			Call{Kind: "agent", User: "RUN: ls", Tool: "a.txt", Last: "tool"}},
		{"messages tool result and text", wireMessages,
			`{"messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"out"},{"type":"text","text":"then b"}]}]}`,
			Call{Kind: "agent", User: "then b", Last: "user"}},
		{"responses request", wireResponses,
			`{"instructions":"Be brief.","input":[{"type":"additional_tools","role":"developer","tools":[{"type":"namespace","name":"functions","tools":[{"type":"custom","name":"exec"}]}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"RUN: ls"}]}],"tools":[{"type":"function","name":"exec_command"}]}`,
			Call{Kind: "agent", User: "RUN: ls", System: "Be brief.\n<environment_context>cwd</environment_context>", Last: "user", Tools: []string{"exec_command", "exec"}}},
		{"responses tool output", wireResponses,
			`{"input":[{"role":"user","content":"RUN: ls"},{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"a.txt"},{"type":"message","role":"developer","content":"late"}]}`,
			Call{Kind: "agent", User: "RUN: ls", Tool: "a.txt", System: "late", Last: "tool"}},
		{"responses warm-up", wireResponses, `{"generate":false,"input":[]}`, Call{Kind: "prewarm", quiet: true}},
		{"responses without input", wireResponses, `{"model":"m","stream":true}`, Call{Kind: "agent", model: "m", stream: true}},
	}
	for _, c := range cases {
		if got := readCall(c.api, []byte(c.body), nil); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// TestResponsesItemsFilledByTheirDeltas: each output item is announced
// empty and in progress, its deltas add up to what it is done with, and
// output indexes and sequence numbers count up; a custom call goes as a
// custom_tool_call item with its input verbatim.
func TestResponsesItemsFilledByTheirDeltas(t *testing.T) {
	s := New(Script{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	js := `const r = await tools.exec_command({cmd: "ls > out"});`
	s.Enqueue("", Reply{Text: "a text longer than one fragment", ToolCalls: []ToolCall{{Name: "bash", Arguments: `{"command":"ls -la /tmp"}`}, {Name: "exec", Arguments: js, Custom: true}}})
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"input":"go"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	filled := map[int64]string{} // output index: what its deltas add up to
	for i, e := range readEvents(t, resp.Body) {
		ev := gjson.Parse(e)
		if ev.Get("sequence_number").Int() != int64(i) {
			t.Fatalf("event %d has sequence number %d", i, ev.Get("sequence_number").Int())
		}
		at := ev.Get("output_index").Int()
		switch typ := ev.Get("type").Str; {
		case typ == "response.output_item.added":
			if it := ev.Get("item"); it.Get("status").Str != "in_progress" || it.Get("content.#").Int() != 0 || it.Get("arguments").Str != "" || it.Get("input").Str != "" {
				t.Errorf("item %d announced as %s", at, it.Raw)
			}
		case strings.HasSuffix(typ, ".delta"):
			filled[at] += ev.Get("delta").Str
		case typ == "response.output_item.done":
			it := ev.Get("item")
			want := []string{it.Get("content.0.text").Str, it.Get("arguments").Str, it.Get("input").Str}[at]
			if filled[at] != want || it.Get("status").Str != "completed" {
				t.Errorf("item %d: deltas %q, done with %s", at, filled[at], it.Raw)
			}
		case typ == "response.completed":
			if types := ev.Get("response.output.#.type").Raw; types != `["message","function_call","custom_tool_call"]` {
				t.Errorf("output items %s", types)
			}
		}
	}
	if filled[2] != js {
		t.Errorf("custom input %q, want %q", filled[2], js)
	}
}

// TestCustomCallOnlyOnResponses: a custom tool call asked for on an API
// that cannot carry one is a server error naming it.
func TestCustomCallOnlyOnResponses(t *testing.T) {
	s := New(Script{Default: Reply{ToolCalls: []ToolCall{{Name: "exec", Arguments: "x()", Custom: true}}}})
	srv := httptest.NewServer(s)
	defer srv.Close()
	for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader(body(true, false, "user:x")))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(b), "custom tool call exec") {
			t.Errorf("%s: %s %s", path, resp.Status, b)
		}
	}
}

// TestCountTokens: Claude Code's token count gets an estimate, recorded
// as no model call.
func TestCountTokens(t *testing.T) {
	s := New(Script{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	b := `{"messages":[{"role":"user","content":"count me"}]}`
	resp, err := http.Post(srv.URL+"/v1/messages/count_tokens?beta=true", "application/json", strings.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || gjson.GetBytes(got, "input_tokens").Int() != int64((len(b)+3)/4) {
		t.Fatalf("%s %s", resp.Status, got)
	}
	if r := s.Requests(); len(r) != 1 || r[0].Rule != NotAnswered || r[0].Kind != "" {
		t.Fatalf("recorded %+v", r)
	}
}

// TestHold: a stream of any API stays open Hold after its last event,
// and a client that leaves before ends it.
func TestHold(t *testing.T) {
	const hold = 300 * time.Millisecond
	url, returned := watch(t, New(Script{Hold: hold}))
	for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/responses"} {
		start := time.Now()
		resp, err := http.Post(url+path, "application/json", bytes.NewReader(body(true, false, "user:x")))
		if err != nil {
			t.Fatal(err)
		}
		evs := readEvents(t, resp.Body) // to the end of the body
		resp.Body.Close()
		<-returned
		if took := time.Since(start); len(evs) == 0 || took < hold*9/10 {
			t.Errorf("%s: %d events, the body ended after %v, want %v", path, len(evs), took, hold)
		}
	}
	url, returned = watch(t, New(Script{Hold: time.Hour}))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/responses", strings.NewReader(`{"input":"x"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	for line := ""; !strings.HasPrefix(line, "event: response.completed"); {
		if line, err = bufioLine(resp.Body); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	resp.Body.Close()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("a held stream outlived its client by 10 s")
	}
}

// TestAnswerRules: an Answer makes the reply from the call; one that
// declines passes the call on without using up its Times; one that makes
// an invalid reply answers a server error naming the rule and field.
func TestAnswerRules(t *testing.T) {
	var seen []Call
	s := New(Script{Rules: []Rule{
		{Times: 1, Answer: func(c Call) (Reply, bool) {
			seen = append(seen, c)
			return Reply{Text: "tools " + strings.Join(c.Tools, ",")}, strings.Contains(c.User, "tools")
		}},
		{When: Match{User: "bad"}, Answer: func(Call) (Reply, bool) { return Reply{ToolCalls: []ToolCall{{}}}, true }},
	}, Default: Reply{Text: "default"}})
	srv := httptest.NewServer(s)
	defer srv.Close()
	chat := func(user string) (int, string) {
		b := `{"tools":[{"type":"function","function":{"name":"bash"}}],"messages":[{"role":"user","content":"` + user + `"}]}`
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		return 200, text(t, resp)
	}
	for _, c := range []struct {
		user   string
		status int
		want   string
	}{
		{"hi", 200, "default"},
		{"tools?", 200, "tools bash"},
		{"tools again", 200, "default"}, // Times 1: used up by the second call only
		{"bad", 500, "rule 1: answer: tool_calls[0].name"},
	} {
		if status, got := chat(c.user); status != c.status || !strings.Contains(got, c.want) {
			t.Errorf("%q answered %d %q, want %d %q", c.user, status, got, c.status, c.want)
		}
	}
	// Requests takes the lock the answers ran under: seen is theirs.
	if got := s.Requests(); !reflect.DeepEqual([]int{got[0].Rule, got[1].Rule, got[3].Rule}, []int{AnsweredByDefault, 0, 1}) {
		t.Errorf("recorded rules %d %d %d", got[0].Rule, got[1].Rule, got[3].Rule)
	}
	if len(seen) != 2 || seen[0].User != "hi" || seen[1].User != "tools?" {
		t.Errorf("the answer saw %+v", seen)
	}
}
