package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/tidwall/gjson"
)

var update = flag.Bool("update", false, "rewrite golden files")

// load reads a real OpenCode request: body bytes, headers and path.
func load(tb testing.TB, name string) ([]byte, http.Header, string) {
	r := capture.Load(tb, name)
	return r.Body, r.Header, r.Path
}

func chatCaptures(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, name := range capture.Names(t) {
		if _, _, path := load(t, name); path == "/v1/chat/completions" {
			names = append(names, name)
		}
	}
	if len(names) < 8 {
		t.Fatalf("found %d chat captures", len(names))
	}
	return names
}

// summary renders what Parse understood, for golden comparison.
func summary(tr *Transcript) string {
	var b strings.Builder
	fmt.Fprintf(&b, "format=%s kind=%s preamble=%d turns=%d\n", tr.Format, tr.Kind, tr.Preamble, len(tr.Turns))
	for i, turn := range tr.Turns {
		fmt.Fprintf(&b, "turn %d kind=%d messages=[%d,%d) request=%q\n", i, turn.Kind, turn.Start, turn.End, clip(turn.Request(tr).Text(), 60))
	}
	for _, m := range tr.Messages {
		fmt.Fprintf(&b, "msg %d role=%s bytes=%d text=%q", m.Index, m.Role, len(m.Raw), clip(m.Text(), 40))
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, " call=%s:%s(%s)", c.ID, c.Name, clip(c.Arguments, 40))
		}
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " result-of=%s", m.ToolCallID)
		}
		for _, r := range m.Results {
			fmt.Fprintf(&b, " result-of=%s(%s)", r.ID, clip(r.Text(), 30))
		}
		b.WriteByte('\n')
	}
	fps := tr.Fingerprints()
	for i, fp := range fps {
		fmt.Fprintf(&b, "fp %d %s\n", i, fp)
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func TestGoldenCaptures(t *testing.T) {
	for _, name := range chatCaptures(t) {
		t.Run(name, func(t *testing.T) {
			body, h, _ := load(t, name)
			tr, err := Parse(OpenAIChat, body, OpenAIChat.Hints(h))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tr, body, filepath.Join("testdata", name+".golden"))
		})
	}
}

// checkGolden compares what Parse understood of body with the golden file
// (rewritten with -update), and checks that keeping every turn rebuilds
// the body unchanged.
func checkGolden(t *testing.T, tr *Transcript, body []byte, golden string) {
	t.Helper()
	got := summary(tr)
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("summary differs from %s:\n%s", golden, got)
	}
	out, err := tr.Rebuild(Edit{Keep: tr.Keep(allTurns(tr))})
	if err != nil || !bytes.Equal(out, body) {
		t.Errorf("rebuild with every turn kept changed the body (err %v)", err)
	}
}

func allTurns(tr *Transcript) []int {
	ts := make([]int, len(tr.Turns))
	for i := range ts {
		ts[i] = i
	}
	return ts
}

func TestKinds(t *testing.T) {
	want := map[string]Kind{
		"first_agent_request":                 Agent,
		"title_request":                       Title,
		"compaction_manual_request":           Compaction,
		"compaction_with_prior_summary":       Compaction,
		"subagent_request_with_parent_header": Subagent,
		"after_autocompaction_request":        Agent,
		"continue_request":                    Agent,
		"tool_result_request":                 Agent,
	}
	for name, kind := range want {
		body, h, _ := load(t, name)
		tr, err := Parse(OpenAIChat, body, OpenAIChat.Hints(h))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tr.Kind != kind {
			t.Errorf("%s: kind %s, want %s", name, tr.Kind, kind)
		}
	}
}

func TestSegmentation(t *testing.T) {
	body, h, _ := load(t, "continue_request")
	tr, err := Parse(OpenAIChat, body, OpenAIChat.Hints(h))
	if err != nil {
		t.Fatal(err)
	}
	// system | user, assistant(tool call), tool, assistant | user
	if tr.Preamble != 1 || len(tr.Turns) != 2 || tr.Turns[0] != (Turn{Request, 1, 5}) || tr.Turns[1] != (Turn{Request, 5, 6}) {
		t.Fatalf("turns %+v preamble %d", tr.Turns, tr.Preamble)
	}
	body, h, _ = load(t, "after_autocompaction_request")
	tr, err = Parse(OpenAIChat, body, OpenAIChat.Hints(h))
	if err != nil {
		t.Fatal(err)
	}
	// The recap and the synthetic "Continue..." form one Summary turn: no request.
	if len(tr.Turns) != 1 || tr.Turns[0] != (Turn{Summary, 1, 4}) {
		t.Fatalf("after compaction: turns %+v", tr.Turns)
	}
}

func TestRebuildDropsWholeTurns(t *testing.T) {
	body, h, _ := load(t, "continue_request")
	tr, err := Parse(OpenAIChat, body, OpenAIChat.Hints(h))
	if err != nil {
		t.Fatal(err)
	}
	mem := []byte(`{"role":"user","content":"[rcm] task state"}`)
	out, err := tr.Rebuild(Edit{Keep: tr.Keep([]int{1}), Insert: []Insert{{Before: 5, Raw: mem}}, Replace: map[int][]byte{0: []byte(`{"role":"system","content":"s"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if !gjson.ValidBytes(out) {
		t.Fatal("rebuilt body is not valid JSON")
	}
	var roles []string
	gjson.GetBytes(out, "messages.#.role").ForEach(func(_, r gjson.Result) bool {
		roles = append(roles, r.String())
		return true
	})
	if got := strings.Join(roles, ","); got != "system,user,user" {
		t.Fatalf("roles %s", got)
	}
	if gjson.GetBytes(out, "messages.0.content").String() != "s" {
		t.Fatal("replacement not applied")
	}
	if gjson.GetBytes(out, "messages.1.content").String() != "[rcm] task state" {
		t.Fatal("memory message not before the current request")
	}
	if _, err := tr.Rebuild(Edit{Keep: []int{0}, Insert: []Insert{{Before: 3}, {Before: 1}}}); err == nil {
		t.Fatal("unordered inserts accepted")
	}
	// Everything outside the messages array is byte-identical.
	prefix, suffix := body[:tr.arrStart], body[tr.arrEnd:]
	if !bytes.HasPrefix(out, prefix) || !bytes.HasSuffix(out, suffix) {
		t.Fatal("bytes outside messages changed")
	}
	if _, err := tr.Rebuild(Edit{Keep: []int{2, 1}}); err == nil {
		t.Fatal("out-of-order indexes accepted")
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		body string
		err  error
	}{
		{`not json`, ErrNotJSON},
		{`{"messages":[`, ErrNotJSON},
		{`[1,2]`, ErrNotObject},
		{`"x"`, ErrNotObject},
		{`{"model":"m"}`, ErrNoMessages},
		{`{"messages":{}}`, ErrNoMessages},
		{`{"messages":[1]}`, ErrBadMessage},
		{`{"messages":[{"content":"x"}]}`, ErrBadMessage},
		{`{"messages":[{"role":3}]}`, ErrBadMessage},
	}
	for _, c := range cases {
		if _, err := Parse(OpenAIChat, []byte(c.body), Hints{}); err != c.err {
			t.Errorf("%s: err %v, want %v", c.body, err, c.err)
		}
	}
}

func TestUnsupportedFormats(t *testing.T) {
	if _, err := Parse(Format(99), []byte(`{}`), Hints{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown format: err %v", err)
	}
	if _, ok := FormatOf("/v1/models"); ok {
		t.Error("/v1/models taken for a model call")
	}
}

func TestContentParts(t *testing.T) {
	body := `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]}]}`
	tr, err := Parse(OpenAIChat, []byte(body), Hints{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Messages[0].Text() != "a\nb" {
		t.Fatalf("text %q", tr.Messages[0].Text())
	}
}

func TestFingerprintsStableWhileSessionGrows(t *testing.T) {
	a, h, _ := load(t, "tool_result_request")
	b, _, _ := load(t, "continue_request")
	ta, _ := Parse(OpenAIChat, a, OpenAIChat.Hints(h))
	tb, _ := Parse(OpenAIChat, b, OpenAIChat.Hints(h))
	fa, fb := ta.Fingerprints(), tb.Fingerprints()
	if len(fa) != 1 || len(fb) != 2 || fa[0] != fb[0] || fb[0] == fb[1] {
		t.Fatalf("fingerprints %v %v", fa, fb)
	}
	// The same words at another point of the session fingerprint differently.
	same := `{"messages":[{"role":"user","content":"go"},{"role":"user","content":"go"}]}`
	ts, _ := Parse(OpenAIChat, []byte(same), Hints{})
	if fs := ts.Fingerprints(); fs[0] == fs[1] {
		t.Fatal("repeated request got the same fingerprint")
	}
}

// TestFingerprintsFromParse: the fingerprints Parse computes while it
// segments (from the texts it decodes anyway) are those of the turns'
// opening texts, on every captured request of the three clients.
func TestFingerprintsFromParse(t *testing.T) {
	n := 0
	for _, dir := range []string{capture.Dir(), capture.ClaudeCodeDir(), filepath.Join(capture.Dir(), "..", "codex")} {
		for _, name := range capture.NamesIn(t, dir) {
			r := capture.LoadIn(t, dir, name)
			f, call := FormatOf(r.Path)
			if !call || r.Body == nil {
				continue
			}
			tr, err := Parse(f, r.Body, f.Hints(r.Header))
			if err != nil {
				continue // not a model call's body (a WebSocket frame)
			}
			got := tr.Fingerprints()
			tr.fps = nil
			if want := tr.Fingerprints(); !slices.Equal(got, want) || len(got) != len(tr.Turns) {
				t.Errorf("%s: Parse's fingerprints %v, from the texts %v", name, got, want)
			}
			n += len(got)
		}
	}
	if n < 20 {
		t.Fatalf("only %d turns fingerprinted across the captures", n)
	}
}

func FuzzParseRebuild(f *testing.F) {
	for _, name := range []string{"continue_request", "title_request", "after_autocompaction_request"} {
		body, _, _ := load(f, name)
		f.Add(body)
	}
	f.Add([]byte(`{"messages":[{"role":"user","content":"x"}],"model":"m"}`))
	f.Add([]byte(` { "messages" : [ {"role":"system","content":[]} , {"role":"user","content":"q"} ] } `))
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, err := Parse(OpenAIChat, body, Hints{})
		if err != nil {
			return
		}
		out, err := tr.Rebuild(Edit{Keep: tr.Keep(allTurns(tr))})
		if err != nil || !bytes.Equal(out, body) {
			t.Fatalf("full rebuild changed the body: %v", err)
		}
		if len(tr.Turns) == 0 {
			return
		}
		cur := []int{len(tr.Turns) - 1}
		out, err = tr.Rebuild(Edit{Keep: tr.Keep(cur), Insert: []Insert{{Before: tr.Turns[cur[0]].Start, Raw: []byte(`{"role":"user","content":"m"}`)}}})
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out) {
			t.Fatalf("rebuild produced invalid JSON: %s", out)
		}
		again, err := Parse(OpenAIChat, out, Hints{})
		if err != nil {
			t.Fatalf("rebuilt body does not parse: %v", err)
		}
		if len(again.Messages) != len(tr.Keep(cur))+1 {
			t.Fatalf("rebuilt body has %d messages", len(again.Messages))
		}
	})
}

// FuzzTextEnds: the ends TextEnds decodes are those of Text, and so is the
// length, whatever escapes and runes the content holds.
func FuzzTextEnds(f *testing.F) {
	f.Add("line of output\n", 300, 4096, 4096)
	f.Add("quote \" back \\ slash / tab\t é 𝄞\r\n\b\f", 97, 5, 1)
	f.Add("\u00e9\u0001", 3, 1, 1)
	f.Fuzz(func(t *testing.T, unit string, repeat, head, tail int) {
		if repeat < 0 || repeat > 3000 || len(unit)*repeat > 1<<20 || head < 0 || tail < 0 || head > 1<<16 || tail > 1<<16 {
			return
		}
		content, _ := json.Marshal(strings.Repeat(unit, repeat))
		tr, err := Parse(OpenAIChat, []byte(`{"messages":[{"role":"tool","content":`+string(content)+`}]}`), Hints{})
		if err != nil {
			t.Fatal(err)
		}
		m := &tr.Messages[0]
		first, last, n, ok := m.TextEnds(head, tail)
		if !ok {
			if !strings.Contains(string(content), `\u`) {
				t.Fatalf("no ends of %.60s", content)
			}
			return
		}
		text := m.Text()
		if n != len(text) || first != text[:min(head, n)] || last != text[n-min(tail, n):] {
			t.Fatalf("ends %q %q of %d, text %q", first, last, n, text)
		}
	})
}

// TestMessagesSizedToTheirCount: a messages array longer than the first
// estimate (one message a KB) grows to about what the rest of it holds,
// not to append's double, parsed whole or through the cache.
func TestMessagesSizedToTheirCount(t *testing.T) {
	body := func(n int) []byte {
		var b bytes.Buffer
		b.WriteString(`{"model":"m","messages":[{"role":"system","content":"s"}`)
		for i := range n {
			fmt.Fprintf(&b, `,{"role":"user","content":"%d %s"}`, i, strings.Repeat("x", 880))
		}
		b.WriteString(`]}`)
		return b.Bytes()
	}
	check := func(how string, tr *Transcript, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tr.Messages); cap(tr.Messages) > n+n/4+8 {
			t.Errorf("%s: %d messages in a slice of %d", how, n, cap(tr.Messages))
		}
	}
	whole, err := Parse(OpenAIChat, body(130), Hints{})
	check("parsed whole", whole, err)
	c := NewCache(64 << 20)
	_, err = c.Parse("s", OpenAIChat, body(60), Hints{})
	if err != nil {
		t.Fatal(err)
	}
	next, err := c.Parse("s", OpenAIChat, body(200), Hints{})
	check("through the cache", next, err)
	if next.reused == 0 {
		t.Fatal("the cache did not take over the earlier messages")
	}
}
