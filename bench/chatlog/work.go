package chatlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/rcm-dev/rcm/internal/chat"
)

// work builds one turn's messages from a reply read in order: text, and
// tool calls with their results. Calls with no text between them share an
// assistant message, as one model step; text before them is that
// message's content, and text after the last call is the reply.
type work struct {
	workdir string
	ids     *int // the session's call counter, so ids stay unique across turns
	out     []chat.Message
	text    []string
	calls   []chat.ToolCall
	results []string
}

func newWork(workdir string, ids *int) *work { return &work{workdir: workdir, ids: ids} }

// say adds reply text.
func (w *work) say(s string) {
	if s = strings.TrimSpace(s); s == "" {
		return
	}
	if len(w.calls) > 0 {
		w.step()
	}
	w.text = append(w.text, s)
}

// call adds a call of OpenCode's tool name with args, answered by result.
func (w *work) call(name string, args map[string]any, result string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as a JavaScript harness encodes
	_ = enc.Encode(args)     // args hold strings only
	raw := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	*w.ids++
	w.calls = append(w.calls, chat.ToolCall{ID: fmt.Sprintf("call_%d", *w.ids), Type: "function",
		Function: chat.FunctionCall{Name: name, Arguments: string(raw)}})
	w.results = append(w.results, result)
}

// step ends a model step: its text and calls as one assistant message,
// then the calls' results.
func (w *work) step() {
	w.out = append(w.out, chat.Message{Role: chat.RoleAssistant, Content: strings.Join(w.text, "\n\n"), ToolCalls: w.calls})
	for i, c := range w.calls {
		w.out = append(w.out, chat.Message{Role: chat.RoleTool, ToolCallID: c.ID, Content: w.results[i]})
	}
	w.text, w.calls, w.results = nil, nil, nil
}

// messages ends the reply and returns the turn's messages.
func (w *work) messages() []chat.Message {
	if len(w.calls) > 0 || len(w.text) > 0 {
		w.step()
	}
	return w.out
}

// abs is a logged file name as an absolute path under the workdir:
// Windows separators become slashes, an absolute path stays (a Windows
// one without its drive letter).
func (w *work) abs(name string) string {
	name = strings.ReplaceAll(strings.TrimSpace(name), `\`, "/")
	if len(name) > 2 && name[1] == ':' && name[2] == '/' {
		name = name[2:]
	}
	if path.IsAbs(name) {
		return path.Clean(name)
	}
	return path.Join(w.workdir, name)
}
