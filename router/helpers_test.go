package router

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/transcript"
)

// dataDir is the shared data set beside the repository (CI clones it as
// <clone>/../shared).
const dataDir = "../../shared/data"

func needData(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(dataDir, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared data %s not found (clone shared/ beside the repository): %v", p, err)
	}
	return p
}

// msg is an OpenAI chat message as OpenCode sends it.
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

func user(text string) msg { return msg{Role: "user", Content: text} }

func toolCall(id, name string, args any) msg {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	c := call{ID: id, Type: "function"}
	c.Function.Name, c.Function.Arguments = name, string(raw)
	return msg{Role: "assistant", ToolCalls: []call{c}}
}

func toolResult(id, out string) msg { return msg{Role: "tool", ToolCallID: id, Content: out} }

// body assembles a chat-completions body from pre-encoded messages.
type body struct {
	head, tail []byte
	msgs       [][]byte
}

func newBody(system string) *body {
	b := &body{head: []byte(`{"model":"m","messages":[`), tail: []byte(`],"stream":true}`)}
	b.add(msg{Role: "system", Content: system})
	return b
}

func (b *body) add(ms ...msg) {
	for _, m := range ms {
		raw, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		b.msgs = append(b.msgs, raw)
	}
}

// bytes returns the body holding the first n messages.
func (b *body) bytes(n int) []byte {
	out := append([]byte(nil), b.head...)
	out = append(out, bytes.Join(b.msgs[:n], []byte{','})...)
	return append(out, b.tail...)
}

func parse(t testing.TB, raw []byte) *transcript.Transcript {
	t.Helper()
	tr, err := transcript.Parse(transcript.OpenAIChat, raw, nil)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return tr
}

// store mimics the proxy's label store: labels by turn fingerprint, a
// routed label never replaced.
type store map[transcript.Fingerprint]Prior

func (s store) priors(tr *transcript.Transcript) []Prior {
	fps := tr.Fingerprints()
	ps := make([]Prior, len(fps))
	for i, fp := range fps {
		ps[i] = s[fp]
	}
	return ps
}

func (s store) put(tr *transcript.Transcript, p Plan) {
	for i, fp := range tr.Fingerprints() {
		if old, ok := s[fp]; ok && old.Routed {
			continue
		}
		s[fp] = p.Turns[i].Prior()
	}
}

// route runs one call as the proxy would: priors in, labels out.
func (s store) route(t testing.TB, r *Router, raw []byte, opt Options) (*transcript.Transcript, Plan) {
	t.Helper()
	tr := parse(t, raw)
	p, err := r.Route(context.Background(), tr, s.priors(tr), opt)
	if err != nil {
		t.Fatalf("route: %v", err)
	}
	s.put(tr, p)
	return tr, p
}

// sweTogether converts a SWE-Together session (Anthropic content blocks) to
// OpenAI chat messages: human strings become requests, tool_use blocks
// assistant tool_calls, tool_result blocks role "tool" messages.
func sweTogether(t testing.TB, path string) []msg {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []msg
	for _, m := range s.Messages {
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			out = append(out, msg{Role: m.Role, Content: text})
			continue
		}
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			t.Fatalf("%s: content: %v", path, err)
		}
		a := msg{Role: "assistant"}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				if m.Role == "assistant" {
					a.Content += b.Text
				} else if n := len(out); n > 0 && out[n-1].Role == "tool" {
					out[n-1].Content += "\n" + b.Text // harness notes beside a tool result
				}
			case "tool_use":
				c := call{ID: b.ID, Type: "function"}
				c.Function.Name, c.Function.Arguments = b.Name, string(b.Input)
				a.ToolCalls = append(a.ToolCalls, c)
			case "tool_result":
				out = append(out, toolResult(b.ToolUseID, blockText(b.Content)))
			}
		}
		if m.Role == "assistant" && (a.Content != "" || len(a.ToolCalls) > 0) {
			out = append(out, a)
		}
	}
	return out
}

func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// swTask is one task of an interleaved session: its turns (a request and
// the steps that answer it) in its own checkout.
type swTask struct {
	id    string
	ws    string
	turns [][]msg
}

var bashBlock = regexp.MustCompile("(?s)```bash\\s*\\n(.*?)```")

// miniSWE converts a mini-swe-agent trajectory into the task's turns, as
// OpenCode would send them: bash commands become bash tool calls (with
// workdir when workdir is set), outputs tool results, /testbed the task's
// checkout. Turns: the issue; the hints, when the task has some; a closing
// request naming the checkout.
func miniSWE(t testing.TB, path, ws, hints string, workdir bool) swTask {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		InstanceID string `json:"instance_id"`
		Messages   []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &tr); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	fix := func(s string) string { return strings.ReplaceAll(s, "/testbed", ws) }
	var steps [][]msg
	for i := 2; i+1 < len(tr.Messages); i += 2 {
		a, out := tr.Messages[i], tr.Messages[i+1]
		if a.Role != "assistant" {
			break
		}
		m := bashBlock.FindStringSubmatch(a.Content)
		if m == nil {
			continue
		}
		thought := strings.TrimSpace(a.Content[:strings.Index(a.Content, "```bash")])
		args := map[string]string{"command": fix(strings.TrimSpace(m[1]))}
		if workdir {
			args["workdir"] = ws
		}
		id := fmt.Sprintf("call_%d", i/2)
		tc := toolCall(id, "bash", args)
		tc.Content = fix(thought)
		steps = append(steps, []msg{tc, toolResult(id, fix(out.Content))})
	}
	reqs := []string{fix(tr.Messages[1].Content)}
	if strings.TrimSpace(hints) != "" {
		reqs = append(reqs, hints)
	}
	reqs = append(reqs, fmt.Sprintf("Let's wrap up the work in %s: check the final diff and submit it.", ws))
	task := swTask{id: tr.InstanceID, ws: ws}
	for k, r := range reqs {
		turn := []msg{user(r)}
		for _, st := range steps[k*len(steps)/len(reqs) : (k+1)*len(steps)/len(reqs)] {
			turn = append(turn, st...)
		}
		task.turns = append(task.turns, turn)
	}
	return task
}

// hintsByID reads the SWE-bench records' hints.
func hintsByID(t testing.TB) map[string]string {
	f, err := os.Open(needData(t, "swebench-instances.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hints := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r struct {
			InstanceID string `json:"instance_id"`
			Hints      string `json:"hints_text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		hints[r.InstanceID] = r.Hints
	}
	return hints
}

// interleavedSessions groups the mini-swe-agent tasks of each repository
// into sessions of five, task k in /work/ws<k+1>.
func interleavedSessions(t testing.TB, workdir bool) [][]swTask {
	dir := needData(t, "trajectories/mini-swe-agent")
	hints := hintsByID(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.traj.json"))
	sort.Strings(files)
	byRepo := map[string][]string{}
	var repos []string
	for _, f := range files {
		repo := strings.SplitN(filepath.Base(f), "__", 2)[0]
		if byRepo[repo] == nil {
			repos = append(repos, repo)
		}
		byRepo[repo] = append(byRepo[repo], f)
	}
	var sessions [][]swTask
	for _, repo := range repos {
		fs := byRepo[repo]
		for i := 0; i+5 <= len(fs); i += 5 {
			var s []swTask
			for k, f := range fs[i : i+5] {
				id := strings.TrimSuffix(filepath.Base(f), ".traj.json")
				s = append(s, miniSWE(t, f, fmt.Sprintf("/work/ws%d", k+1), hints[id], workdir))
			}
			sessions = append(sessions, s)
		}
	}
	return sessions
}

// schedule interleaves the tasks' turns stage by stage (A1, B1, ..., A2,
// B2, ...) and returns the turns with the index of the task of each.
func schedule(tasks []swTask) (turns [][]msg, truth []int) {
	for stage := 0; ; stage++ {
		any := false
		for k, task := range tasks {
			if stage < len(task.turns) {
				turns = append(turns, task.turns[stage])
				truth = append(truth, k)
				any = true
			}
		}
		if !any {
			return turns, truth
		}
	}
}
