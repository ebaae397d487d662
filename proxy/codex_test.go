package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rcm-dev/rcm/internal/client/codex"
	"github.com/rcm-dev/rcm/internal/npm/npmtest"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// codexBin returns the codex binary of codex.Version (the release of the
// captures in testdata/codex), installed into ~/.cache/rcm when absent;
// RCM_REQUIRE_CODEX=1 under CI makes a failed install a failure rather
// than a skip.
func codexBin(ctx context.Context, t *testing.T) string {
	bin, err := codex.Install(ctx, "")
	npmtest.Need(t, "Codex "+codex.Version, "RCM_REQUIRE_CODEX", err)
	return bin
}

// codexModel is a scripted Responses API for Codex (and OpenCode's OpenAI
// provider), over HTTP (SSE) and WebSocket, answering as
// ../shared/codex/fake_model_server.py does: a last user message saying
// "RUN: cmd" gets one tool call running cmd (a custom exec call in
// JavaScript when the request carries the additional_tools item, OpenCode's
// bash when it offers one, else an exec_command function call), a tool
// output gets "Done.", the compaction prompt a summary with one section per
// task, anything else a short answer. A request whose last user message
// says "BIG" reports 50000 input tokens, so that Codex compacts before its
// next turn.
type codexModel struct {
	// hold keeps an HTTP stream open this long after its last event
	// unless the client leaves first, as an API may before it ends the
	// stream: Codex closes its connection once it has read
	// response.completed, before the stream has ended.
	hold time.Duration

	mu    sync.Mutex
	calls []codexCall
	n     int
}

type codexCall struct {
	kind string // request_kind of Codex's turn metadata
	body []byte // as received
	full []byte // body, or a chained WebSocket frame expanded with the connection's history
}

var runRE = regexp.MustCompile(`RUN:\s*(.+)`)

func (m *codexModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/responses" {
		http.NotFound(w, r)
		return
	}
	if websocket.IsWebSocketUpgrade(r) {
		m.serveWS(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	evs := m.answer(body, body)
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range evs {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", gjson.Get(e, "type").Str, e)
	}
	if m.hold > 0 {
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(m.hold):
		}
	}
}

func (m *codexModel) serveWS(w http.ResponseWriter, r *http.Request) {
	c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	// The API remembers the connection's responses: a chained frame
	// (native mode relays Codex's) continues them.
	var conv transcript.Conversation
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			return
		}
		full, err := conv.Expand(msg)
		if err != nil {
			full = msg
		}
		for _, e := range m.answer(msg, full) {
			if ev, ok := transcript.ReadResponsesEvent([]byte(e)); ok && ev.Done {
				conv.Complete(ev)
			}
			if err := c.WriteMessage(websocket.TextMessage, []byte(e)); err != nil {
				return
			}
		}
	}
}

// answer records a request (raw, and full when it was a chained frame) and
// returns its events.
func (m *codexModel) answer(raw, body []byte) []string {
	kind := gjson.Get(gjson.GetBytes(body, "client_metadata.x-codex-turn-metadata").Str, "request_kind").Str
	m.mu.Lock()
	m.calls = append(m.calls, codexCall{kind: kind, body: raw, full: body})
	m.n++
	n := m.n
	m.mu.Unlock()
	id := fmt.Sprintf("resp_%d", n)
	var item, lastUser string
	var custom bool
	var last gjson.Result
	gjson.GetBytes(body, "input").ForEach(func(_, it gjson.Result) bool {
		switch typ := it.Get("type").Str; {
		case typ == "additional_tools":
			custom = true
		case typ == "reasoning" || it.Get("role").Str == "developer" || it.Get("role").Str == "system":
		default:
			last = it
			if it.Get("role").Str == "user" {
				lastUser = it.Get("content").Str
				if it.Get("content").IsArray() {
					lastUser = strings.Join(stringsOf(it.Get("content.#.text").Array()), "\n")
				}
			}
		}
		return true
	})
	msg := func(text string) string {
		q, _ := json.Marshal(text)
		return fmt.Sprintf(`{"id":"msg_%d","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":%s,"annotations":[]}]}`, n, q)
	}
	isUser := last.Get("role").Str == "user"
	switch {
	case gjson.GetBytes(body, "generate").Type == gjson.False:
	case strings.HasSuffix(last.Get("type").Str, "_output"):
		out := last.Get("output")
		item = msg("Done. Tool said: " + strings.TrimSpace(out.String())[:min(len(strings.TrimSpace(out.String())), 200)])
	case isUser && strings.Contains(lastUser, "CONTEXT CHECKPOINT COMPACTION"):
		var b strings.Builder
		b.WriteString("Shared: one checkout.\n")
		for _, id := range regexp.MustCompile(`<task id="([^"]+)"`).FindAllStringSubmatch(lastUser, -1) {
			fmt.Fprintf(&b, "## Task %s\nSummary of task %s.\n", id[1], id[1])
		}
		item = msg(b.String())
	case isUser && runRE.MatchString(lastUser):
		cmd := strings.TrimSpace(runRE.FindStringSubmatch(lastUser)[1])
		q, _ := json.Marshal(cmd)
		switch {
		case gjson.GetBytes(body, `tools.#(name=="bash")`).Exists():
			// OpenCode's OpenAI provider: its bash tool.
			args, _ := json.Marshal(`{"command": ` + string(q) + `, "description": "Run the command"}`)
			item = fmt.Sprintf(`{"id":"fc_%d","type":"function_call","status":"completed","name":"bash","call_id":"call_%d","arguments":%s}`, n, n, args)
		case custom:
			js, _ := json.Marshal("const r = await tools.exec_command({cmd: " + string(q) + "});\ntext(r);\n")
			item = fmt.Sprintf(`{"id":"ctc_%d","type":"custom_tool_call","status":"completed","call_id":"call_%d","name":"exec","input":%s}`, n, n, js)
		default:
			args, _ := json.Marshal(`{"cmd": ` + string(q) + `}`)
			item = fmt.Sprintf(`{"id":"fc_%d","type":"function_call","status":"completed","name":"exec_command","call_id":"call_%d","arguments":%s}`, n, n, args)
		}
	default:
		item = msg("Hello from the scripted model.")
	}
	tokens := 1200
	if strings.Contains(lastUser, "BIG") {
		tokens = 50000
	}
	created := fmt.Sprintf(`{"type":"response.created","response":{"id":%q,"object":"response","status":"in_progress","output":[]}}`, id)
	evs := []string{created}
	output := ""
	if item != "" {
		evs = append(evs, itemEvents(item)...)
		output = item
	}
	return append(evs, fmt.Sprintf(`{"type":"response.completed","response":{"id":%q,"object":"response","status":"completed","output":[%s],"usage":{"input_tokens":%d,"input_tokens_details":{"cached_tokens":0},"output_tokens":12,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}}}`, id, output, tokens, tokens+12))
}

// itemEvents streams one output item as the API does: added (empty), its
// deltas, done. The AI SDK (OpenCode) needs every step; Codex reads the
// done item.
func itemEvents(item string) []string {
	it := gjson.Parse(item)
	id := it.Get("id").Str
	ev := func(typ, rest string) string {
		return fmt.Sprintf(`{"type":%q,"item_id":%q,"output_index":0%s}`, typ, id, rest)
	}
	var added string
	var mid []string
	switch it.Get("type").Str {
	case "message":
		text, _ := json.Marshal(it.Get("content.0.text").Str)
		added, _ = sjson.SetRaw(item, "content", "[]")
		mid = []string{
			ev("response.content_part.added", `,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`),
			ev("response.output_text.delta", `,"content_index":0,"delta":`+string(text)),
			ev("response.output_text.done", `,"content_index":0,"text":`+string(text)),
			ev("response.content_part.done", `,"content_index":0,"part":`+it.Get("content.0").Raw),
		}
	case "function_call":
		added, _ = sjson.Set(item, "arguments", "")
		args := it.Get("arguments").Raw
		mid = []string{ev("response.function_call_arguments.delta", `,"delta":`+args), ev("response.function_call_arguments.done", `,"arguments":`+args)}
	case "custom_tool_call":
		added, _ = sjson.Set(item, "input", "")
		in := it.Get("input").Raw
		mid = []string{ev("response.custom_tool_call_input.delta", `,"delta":`+in), ev("response.custom_tool_call_input.done", `,"input":`+in)}
	}
	added, _ = sjson.Set(added, "status", "in_progress")
	out := []string{`{"type":"response.output_item.added","output_index":0,"item":` + added + `}`}
	out = append(out, mid...)
	return append(out, `{"type":"response.output_item.done","output_index":0,"item":`+item+`}`)
}

// since returns the calls recorded from index i on.
func (m *codexModel) since(i int) []codexCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]codexCall(nil), m.calls[i:]...)
}

func (m *codexModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)
}

// codexEnv is a scratch HOME and CODEX_HOME with a config.toml whose
// provider points at base (rcm), and a git checkout with two task folders.
func codexEnv(t *testing.T, base string, ws bool) (env []string, dir string) {
	home := t.TempDir()
	env, err := codex.Env(home, codex.Config{BaseURL: base, WebSocket: ws}, "sk-client")
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(home, "project")
	for _, d := range []string{"alpha", "beta"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git := exec.Command("git", "init", "-q", dir)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	return env, dir
}

// codexRun runs `codex exec ARGS` in dir and fails the test unless Codex
// exits 0 (it accepted every answer).
func codexRun(ctx context.Context, t *testing.T, bin string, env []string, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"exec"}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, nil
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("codex exec %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestCodexThroughRCM runs the real Codex CLI (npm @openai/codex) through
// rcm in each mode, over HTTP and over WebSocket, against the scripted
// Responses API: two tagged tasks working in two folders, resumed with
// `exec resume --last`, then an inline compaction before the last turn.
// Codex must accept every answer (exit 0, the tool calls' files written);
// native forwards Codex's bodies byte for byte; router and rcm forward the
// returning task's calls with its own items and none of the other task's,
// rcm with its record; rcm's compaction call asks for one section per task.
func TestCodexThroughRCM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Codex CLI (seconds; installs it from npm when not cached)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	bin := codexBin(ctx, t)
	// The default model gets the additional_tools item and answers with
	// custom exec calls; gpt-5.5 gets the classic tools array and answers
	// with exec_command function calls.
	for _, model := range []string{"default", "gpt-5.5"} {
		for _, mode := range []string{"native", "router", "rcm"} {
			for _, transport := range []string{"http", "ws"} {
				t.Run(model+"-"+mode+"-"+transport, func(t *testing.T) {
					var flags []string
					if model != "default" {
						flags = []string{"-m", model}
					}
					codexSessionThrough(ctx, t, bin, flags, mode, transport == "ws")
				})
			}
		}
	}
}

func codexSessionThrough(ctx context.Context, t *testing.T, bin string, flags []string, mode string, ws bool) {
	model := &codexModel{hold: 2 * time.Second}
	h, tap, srv := tappedProxy(t, model)
	env, dir := codexEnv(t, srv.URL+"/"+mode+"/v1", ws)

	run := func(args ...string) {
		codexRun(ctx, t, bin, env, dir, append(append([]string(nil), flags...), args...)...)
	}
	run("[task: alpha] Create the alpha file. RUN: echo alpha > alpha/a.txt")
	run("resume", "--last", "[task: beta] Create the beta file. RUN: echo beta > beta/b.txt")
	back := model.count()
	run("resume", "--last", "[task: alpha] Show the alpha file, BIG. RUN: cat alpha/a.txt")
	returning := model.since(back)
	compact := model.count()
	run("-c", "model_auto_compact_token_limit=20000", "resume", "--last", "[task: alpha] Say goodbye.")
	after := model.since(compact)

	custom := len(flags) == 0
	for i, c := range model.since(0) {
		if frame := gjson.GetBytes(c.body, "type").Str == "response.create"; frame != ws {
			t.Fatalf("call %d came as a WebSocket frame: %v, want %v", i, frame, ws)
		}
		if c.kind == "turn" && strings.Contains(string(c.full), `"type":"additional_tools"`) != custom {
			t.Fatalf("call %d: additional_tools item present: %v, want %v", i, !custom, custom)
		}
	}

	for f, want := range map[string]string{"alpha/a.txt": "alpha\n", "beta/b.txt": "beta\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != want {
			t.Errorf("%s: %q (%v): Codex did not run the scripted tool call", f, b, err)
		}
	}
	var turns []codexCall
	for _, c := range returning {
		if c.kind == "turn" {
			turns = append(turns, c)
		}
	}
	if len(turns) != 2 {
		t.Fatalf("the returning task's turn made %d calls, want 2 (tool call, answer)", len(turns))
	}
	for i, c := range turns {
		s := string(c.full)
		if !strings.Contains(s, "echo alpha > alpha/a.txt") {
			t.Errorf("call %d of the returning task lacks its own earlier turn", i)
		}
		if routed := !strings.Contains(s, "echo beta"); routed != (mode != "native") {
			t.Errorf("call %d: the other task's items forwarded: %v (mode %s)", i, !routed, mode)
		}
		if rec := strings.Contains(s, `<rcm-task-state task=\"alpha\"`); rec != (mode == "rcm") {
			t.Errorf("call %d: alpha's record present: %v (mode %s)", i, rec, mode)
		}
		if chained := gjson.GetBytes(c.body, "previous_response_id").Exists(); chained != (mode == "native" && ws) {
			t.Errorf("call %d went upstream chained: %v (mode %s)", i, chained, mode)
		}
	}
	var compaction *codexCall
	for i, c := range after {
		if c.kind == "compaction" {
			compaction = &after[i]
		}
	}
	if compaction == nil {
		t.Fatalf("no compaction call after the BIG turn (kinds %v)", kinds(after))
	}
	if brief := strings.Contains(string(compaction.full), `<task id=\"alpha\"`) && strings.Contains(string(compaction.full), `<task id=\"beta\"`); brief != (mode == "rcm") {
		t.Errorf("compaction call with one section per task: %v (mode %s)", brief, mode)
	}
	// After compaction, the returning task's calls carry the summary; in
	// rcm mode only its own section of it.
	var post int
	for _, c := range after {
		if c.kind != "turn" || !strings.Contains(string(c.full), "Summary of task alpha") {
			continue
		}
		post++
		if other := strings.Contains(string(c.full), "Summary of task beta"); other != (mode != "rcm") {
			t.Errorf("post-compaction call holds the other task's section: %v (mode %s)", other, mode)
		}
	}
	if post == 0 && mode == "rcm" {
		t.Errorf("no post-compaction call carried the task-aware summary (kinds %v)", kinds(after))
	}
	// Codex may have exited before its last call's handler returned.
	tap.busy.Wait()
	if mode == "native" && ws {
		// Native mode relays a WebSocket byte for byte (upgrade.go): rcm
		// sees no call in it to record.
	} else {
		checkRecorded(t, h, srv.URL, map[string]int{tap.only(t): model.count()})
	}
	calls := tap.snapshot()
	if mode == "native" && !ws {
		// What Codex sent is what the upstream got, byte for byte.
		sent := map[string]int{}
		for _, c := range calls {
			sent[string(c.body)]++
		}
		for i, c := range model.since(0) {
			if sent[string(c.body)] == 0 {
				t.Errorf("upstream call %d (%s) is not a body Codex sent", i, c.kind)
			}
			sent[string(c.body)]--
		}
	}
	if mode != "native" && !ws {
		var tasks []string
		for _, c := range calls {
			if tk := c.resp.Get(HeaderTask); tk != "" {
				tasks = append(tasks, tk)
			}
		}
		if strings.Join(tasks, ",") != "alpha,alpha,beta,beta,alpha,alpha,alpha" {
			t.Errorf("rcm named tasks %v", tasks)
		}
	}
}

func stringsOf(rs []gjson.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Str
	}
	return out
}

func kinds(cs []codexCall) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.kind)
	}
	return out
}
