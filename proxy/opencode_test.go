package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/client/opencode"
	"github.com/rcm-dev/rcm/internal/npm/npmtest"
	"github.com/rcm-dev/rcm/internal/scripted"
	"github.com/rcm-dev/rcm/memory"
	"github.com/tidwall/gjson"
)

// TestOpenCodeThroughRCM runs the real OpenCode client (installed from npm)
// through rcm against the scripted upstream: a multi-turn session with tool
// calls (bash, then write), a title call and a compaction, in native mode
// (bodies must reach the upstream byte-identical) and again through the
// /rcm/v1 prefix (which must work end to end whatever it forwards).
//
// It skips when npm or its registry cannot be reached, unless CI is set and
// RCM_REQUIRE_OPENCODE=1, where that fails.
func TestOpenCodeThroughRCM(t *testing.T) {
	ctx, bin := npmtest.OpenCode.Prepare(t, 5*time.Minute)

	up := scripted.New(ocScript)
	h, tap, rcm := tappedProxy(t, up)

	start := time.Now()
	srv := ocStart(ctx, t, bin, opencode.Config{Proxy: rcm.URL, APIKey: "sk-client", Modes: []string{"native", "rcm"}})
	t.Logf("opencode serve ready in %v", time.Since(start).Round(time.Millisecond))

	t.Run("native", func(t *testing.T) {
		start := time.Now()
		dir := t.TempDir()
		id := ocSession(ctx, t, srv, "native", dir)
		if err := srv.Summarize(ctx, id, dir, "native", opencode.DefaultModelID); err != nil {
			t.Fatalf("%v\nopencode output:\n%s", err, srv.Output())
		}
		ocTitle(ctx, t, srv, id, dir)
		t.Logf("native session in %v", time.Since(start).Round(time.Millisecond))

		sent := tap.session(id)
		got := up.Session(id)
		if len(sent) != len(got) {
			t.Fatalf("OpenCode sent rcm %d calls, the upstream saw %d", len(sent), len(got))
		}
		// Calls may cross (the title call runs beside the first agent call):
		// compare as multisets of bodies.
		want := map[string]int{}
		for _, c := range sent {
			want[string(c.body)]++
			if ocCheckHeaders(t, c, id) != "native" {
				t.Errorf("call through %s, want only the native provider", c.path)
			}
			if c.fallback != FallbackNone {
				t.Errorf("native call answered %s %q", HeaderFallback, c.fallback)
			}
		}
		kinds := map[string]int{}
		for _, r := range got {
			kinds[r.Kind]++
			if r.Path != "/v1/chat/completions" {
				t.Errorf("upstream path %s", r.Path)
			}
			if want[string(r.Body)] == 0 {
				t.Errorf("upstream saw a %s body OpenCode did not send (%d bytes)", r.Kind, len(r.Body))
			}
			want[string(r.Body)]--
			if a := r.Header.Get("Authorization"); a != "Bearer sk-client" {
				t.Errorf("upstream Authorization %q, want the client's", a)
			}
		}
		// Two calls per turn (the tool call, then the answer to its result),
		// the title and the compaction.
		if kinds["agent"] != 4 || kinds["title"] != 1 || kinds["compaction"] != 1 {
			t.Errorf("upstream saw calls of kinds %v, want agent 4, title 1, compaction 1", kinds)
		}
		checkRecorded(t, h, rcm.URL, map[string]int{id: len(got)})
	})

	t.Run("rcm-prefix", func(t *testing.T) {
		start := time.Now()
		id := ocSession(ctx, t, srv, "rcm", t.TempDir())
		t.Logf("rcm-prefix session in %v", time.Since(start).Round(time.Millisecond))
		// The title call goes through small_model's provider (native).
		modes := map[string]int{}
		for _, c := range tap.session(id) {
			modes[ocCheckHeaders(t, c, id)]++
		}
		if modes["rcm"] != 4 || modes["native"] != 1 {
			t.Errorf("calls per mode %v, want rcm 4 (two turns of two calls), native 1 (the title)", modes)
		}
		for _, r := range up.Session(id) {
			if r.Path != "/v1/chat/completions" {
				t.Errorf("upstream path %s, want the prefix stripped", r.Path)
			}
		}
		checkRecorded(t, h, rcm.URL, map[string]int{id: len(up.Session(id))})
	})

	// Two tasks in one OpenCode session, named with the [task: ...] tag:
	// rcm routes each turn, gives the returning task its record, and makes
	// OpenCode's own compaction call keep both tasks.
	t.Run("rcm-tasks", func(t *testing.T) {
		dir := t.TempDir()
		s, err := srv.CreateSession(ctx, dir, "two tasks")
		if err != nil {
			t.Fatal(err)
		}
		turns := []struct{ text, want, task string }{
			{"[task: alpha] Please run the greeting tool.", "The tool said hello-from-tool.", "alpha"},
			{"[task: beta] Now write the note file.", "Wrote note.txt.", "beta"},
			{"[task: alpha] Please run the greeting tool once more.", "The tool said hello-from-tool.", "alpha"},
		}
		for _, tn := range turns {
			m, err := srv.Prompt(ctx, s.ID, dir, "rcm", opencode.DefaultModelID, tn.text)
			if err != nil {
				t.Fatalf("%v\nopencode output:\n%s", err, srv.Output())
			}
			if m.Text() != tn.want {
				t.Fatalf("turn %q answered %q", tn.text, m.Text())
			}
		}
		var tasks []string
		for _, c := range tap.session(s.ID) {
			if ocCheckHeaders(t, c, s.ID) == "rcm" {
				tasks = append(tasks, c.resp.Get(HeaderTask))
			}
		}
		if got := strings.Join(tasks, ","); got != "alpha,alpha,beta,beta,alpha,alpha" {
			t.Fatalf("tasks per call %s, want each turn's tag (two calls a turn)", got)
		}
		calls := up.Session(s.ID)
		last := string(calls[len(calls)-1].Body)
		// Task beta is left out but for its brief in alpha's record.
		if !strings.Contains(last, `[task: alpha] Please run the greeting tool.`) || strings.Contains(last, `"content":"[task: beta]`) ||
			strings.Contains(last, `"content":"Wrote note.txt."`) || !strings.Contains(last, `<rcm-task-state task=\"alpha\">`) ||
			!strings.Contains(last, `Task beta:\nRequirements (verbatim, oldest first):\n- [task: beta] Now write the note file.`) {
			t.Fatalf("the returning task's call holds other tasks' turns or lacks its record:\n%s", last)
		}
		// What the inspector shows of these calls: each turn's task and
		// fate, the record injected into the returning task's calls, and
		// an append-only context within its turn.
		h.after.Wait()
		evs, err := h.store.Events(s.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		var shown []string
		var lastRouted memory.Event
		for _, e := range evs {
			if e.Mode != "rcm" || e.Kind != "agent" {
				continue
			}
			var ts []string
			for _, tn := range e.Turns {
				ts = append(ts, tn.Task+map[bool]string{true: "-dropped"}[tn.Dropped])
			}
			shown = append(shown, strings.Join(ts, " "))
			lastRouted = e
		}
		want := "alpha|alpha|alpha-dropped beta|alpha-dropped beta|alpha beta-dropped alpha|alpha beta-dropped alpha"
		if got := strings.Join(shown, "|"); got != want {
			t.Errorf("inspector turns per call:\n%s\nwant\n%s", got, want)
		}
		if !strings.Contains(string(lastRouted.Record), `rcm-task-state task=\"alpha\"`) || lastRouted.PrefixShare == nil || *lastRouted.PrefixShare < 0.9 {
			t.Errorf("the returning task's second call: record %s, cached-prefix share %v", lastRouted.Record, lastRouted.PrefixShare)
		}
		if err := srv.Summarize(ctx, s.ID, dir, "rcm", opencode.DefaultModelID); err != nil {
			t.Fatalf("%v\nopencode output:\n%s", err, srv.Output())
		}
		var compaction string
		for _, r := range up.Session(s.ID) {
			if r.Kind == "compaction" {
				compaction = gjson.GetBytes(r.Body, "messages.1.content").String()
			}
		}
		for _, want := range []string{"## Task alpha", "## Task beta", "[task: beta] Now write the note file."} {
			if !strings.Contains(compaction, want) {
				t.Fatalf("OpenCode's compaction call reached the model without %q:\n%s", want, compaction)
			}
		}
		checkRecorded(t, h, rcm.URL, map[string]int{s.ID: len(up.Session(s.ID))})
	})
}

// ocScript plays the model: turn 1 runs bash, turn 2 writes a file in the
// session's working directory; side calls get fixed answers.
var ocScript = scripted.Script{
	Models: []string{opencode.DefaultModelID},
	Rules: []scripted.Rule{
		{When: scripted.Match{Kind: "title"}, Reply: scripted.Reply{Text: "Greeting session"}},
		{When: scripted.Match{Kind: "compaction"}, Reply: scripted.Reply{Text: "## Goal\nGreet and write a note.\n## Done\nBoth."}},
		{When: scripted.Match{User: "run the greeting tool", Last: "user"}, Reply: scripted.Reply{ToolCalls: []scripted.ToolCall{
			{Name: "bash", Arguments: `{"command":"echo hello-from-tool","description":"Print a greeting"}`}}}},
		{When: scripted.Match{User: "run the greeting tool", Tool: "hello-from-tool"}, Reply: scripted.Reply{Text: "The tool said hello-from-tool."}},
		{When: scripted.Match{User: "write the note", Last: "user"}, Reply: scripted.Reply{ToolCalls: []scripted.ToolCall{
			{Name: "write", Arguments: `{"filePath":"{{workdir}}/note.txt","content":"written through rcm\n"}`}}}},
		{When: scripted.Match{User: "write the note", Last: "tool"}, Reply: scripted.Reply{Text: "Wrote note.txt."}},
	},
	Default: scripted.Reply{Text: "unscripted call"},
}

// ocStart starts `opencode serve` with a home of its own whose global
// config is oc (its providers pointing at rcm).
func ocStart(ctx context.Context, t *testing.T, bin string, oc opencode.Config) *opencode.Server {
	t.Helper()
	home := t.TempDir()
	env, err := opencode.Env(home)
	if err != nil {
		t.Fatal(err)
	}
	if err := oc.Write(opencode.GlobalConfig(home)); err != nil {
		t.Fatal(err)
	}
	srv, err := opencode.Start(ctx, bin, t.TempDir(), env, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// ocSession runs the two-turn session in a new directory through mode's
// provider and checks what OpenCode did. It returns the session id.
func ocSession(ctx context.Context, t *testing.T, srv *opencode.Server, mode, dir string) string {
	t.Helper()
	s, err := srv.CreateSession(ctx, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	prompt := func(text, want string) {
		t.Helper()
		m, err := srv.Prompt(ctx, s.ID, dir, mode, opencode.DefaultModelID, text)
		if err != nil {
			t.Fatalf("%v\nopencode output:\n%s", err, srv.Output())
		}
		if got := m.Text(); got != want {
			t.Fatalf("turn %q answered %q, want %q (streamed text lost?)", text, got, want)
		}
	}
	prompt("Please run the greeting tool.", "The tool said hello-from-tool.")
	prompt("Now write the note file.", "Wrote note.txt.")

	note, err := os.ReadFile(filepath.Join(dir, "note.txt"))
	if err != nil || string(note) != "written through rcm\n" {
		t.Errorf("note.txt = %q, %v; want the write tool's content", note, err)
	}
	msgs, err := srv.Messages(ctx, s.ID, dir)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]string{}
	for _, m := range msgs {
		for _, p := range m.Tools() {
			if p.State != nil && p.State.Status == "completed" {
				ran[p.Tool] = p.State.Output
			}
		}
	}
	if !strings.Contains(ran["bash"], "hello-from-tool") || ran["write"] == "" {
		t.Errorf("completed tools and outputs %q, want bash printing hello-from-tool and write", ran)
	}
	return s.ID
}

// ocTitle waits for the title OpenCode generates beside the first turn.
func ocTitle(ctx context.Context, t *testing.T, srv *opencode.Server, id, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := srv.GetSession(ctx, id, dir)
		if err != nil {
			t.Fatal(err)
		}
		if s.Title == "Greeting session" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session title %q, want the scripted title", s.Title)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ocCheckHeaders checks a call OpenCode made and rcm's answer to it, and
// returns the mode its path named.
func ocCheckHeaders(t *testing.T, c ocCall, session string) string {
	t.Helper()
	mode, _, _ := strings.Cut(strings.TrimPrefix(c.path, "/"), "/")
	if c.path != "/"+mode+"/v1/chat/completions" {
		t.Errorf("OpenCode called %s", c.path)
	}
	if !gjson.GetBytes(c.body, "stream").Bool() {
		t.Errorf("OpenCode sent a call without stream: true")
	}
	if c.status != http.StatusOK || !strings.HasPrefix(c.resp.Get("Content-Type"), "text/event-stream") ||
		c.resp.Get("X-Accel-Buffering") != "no" {
		t.Errorf("answer %d %q: want a 200 event stream", c.status, c.resp.Get("Content-Type"))
	}
	if c.writes < 3 {
		t.Errorf("event stream written in %d flushes, want one per event", c.writes)
	}
	if c.header.Get("X-Session-Id") != session || c.header.Get("X-Session-Affinity") != session {
		t.Errorf("call without OpenCode's session headers: %v", c.header)
	}
	if got := c.resp.Get(HeaderMode); got != mode {
		t.Errorf("%s %q, want %q", HeaderMode, got, mode)
	}
	if got := c.resp.Get(HeaderSession); got != session {
		t.Errorf("%s %q, want %q", HeaderSession, got, session)
	}
	if n, err := strconv.Atoi(c.resp.Get(HeaderTokensIn)); err != nil || n <= 0 {
		t.Errorf("%s %q", HeaderTokensIn, c.resp.Get(HeaderTokensIn))
	}
	if c.resp.Get(HeaderTokensOut) == "" || c.fallback == "" {
		t.Errorf("missing %s or %s: %v", HeaderTokensOut, HeaderFallback, c.resp)
	}
	return mode
}

// ocTap records what a real client sends rcm and what rcm answers, around
// the proxy handler: every model call (POST), and the sessions every
// request names (WebSocket handshakes included).
type ocTap struct {
	next http.Handler
	mu   sync.Mutex
	seen []ocCall
	ids  map[string]bool
	// busy counts the requests still being answered: a client may exit
	// before its last call's handler has returned.
	busy sync.WaitGroup
}

type ocCall struct {
	path     string
	header   http.Header
	body     []byte
	status   int
	resp     http.Header // rcm's response headers
	fallback string
	writes   int
}

func (tp *ocTap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tp.busy.Add(1)
	defer tp.busy.Done()
	tp.mu.Lock()
	if tp.ids == nil {
		tp.ids = map[string]bool{}
	}
	tp.ids[sessionID(r.Header, nil)] = true
	tp.mu.Unlock()
	if r.Method != http.MethodPost {
		tp.next.ServeHTTP(w, r) // a WebSocket upgrade hijacks w itself
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	tw := &ocWriter{ResponseWriter: w}
	// Deferred: rcm aborts an answer (panics with http.ErrAbortHandler)
	// whose client left before the upstream's stream ended, as Codex does.
	defer func() {
		tp.mu.Lock()
		defer tp.mu.Unlock()
		tp.seen = append(tp.seen, ocCall{path: r.URL.Path, header: r.Header.Clone(), body: body,
			status: tw.status, resp: tw.header, fallback: tw.header.Get(HeaderFallback), writes: tw.writes})
	}()
	tp.next.ServeHTTP(tw, r)
}

// only returns the one session the client's requests named.
func (tp *ocTap) only(t *testing.T) string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if len(tp.ids) != 1 {
		t.Fatalf("the client's requests named sessions %v, want one", tp.ids)
	}
	for id := range tp.ids {
		return id
	}
	return ""
}

// session returns the chat calls of an OpenCode session.
func (tp *ocTap) session(id string) []ocCall {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var out []ocCall
	for _, c := range tp.seen {
		if c.header.Get("X-Session-Id") == id && strings.HasSuffix(c.path, "/chat/completions") {
			out = append(out, c)
		}
	}
	return out
}

// ocWriter notes the status, the headers as sent and the number of writes;
// Unwrap keeps the proxy's per-event flushes working through it.
type ocWriter struct {
	http.ResponseWriter
	status int
	header http.Header
	writes int
}

func (w *ocWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status, w.header = code, w.Header().Clone()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *ocWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.writes++
	return w.ResponseWriter.Write(p)
}

func (w *ocWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
