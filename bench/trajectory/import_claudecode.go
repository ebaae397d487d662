package trajectory

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/rcm-dev/rcm/internal/chat"
)

// claudeTools maps Claude Code tools to OpenCode's: the tool name and, per
// input key, OpenCode's argument name (keys not listed are dropped). Tools
// not listed keep their input under their lowercased name.
var claudeTools = map[string]struct {
	name string
	keys map[string]string
}{
	"Bash":     {"bash", map[string]string{"command": "command", "description": "description", "timeout": "timeout"}},
	"Read":     {"read", map[string]string{"file_path": "filePath", "offset": "offset", "limit": "limit"}},
	"Edit":     {"edit", map[string]string{"file_path": "filePath", "old_string": "oldString", "new_string": "newString", "replace_all": "replaceAll"}},
	"Write":    {"write", map[string]string{"file_path": "filePath", "content": "content"}},
	"Grep":     {"grep", map[string]string{"pattern": "pattern", "path": "path", "glob": "include"}},
	"Glob":     {"glob", map[string]string{"pattern": "pattern", "path": "path"}},
	"Task":     {"task", map[string]string{"description": "description", "prompt": "prompt", "subagent_type": "subagent_type"}},
	"Agent":    {"task", map[string]string{"description": "description", "prompt": "prompt", "subagent_type": "subagent_type"}},
	"Skill":    {"skill", map[string]string{"skill": "name"}},
	"WebFetch": {"webfetch", map[string]string{"url": "url"}},
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	ToolName  string          `json:"tool_name"`
}

// ReadClaudeCode converts a Claude-Code style session ({session_id,
// messages[{role, content}]}, content a string or Anthropic content blocks)
// into a Trajectory. Each user message whose content is a string is a human
// request and opens a turn. Consecutive assistant entries (Claude Code logs
// each block of one response as its own entry) merge into one assistant
// message, and so do entries of one response (the same message id) that a
// tool result was logged between (a parallel call's result can be logged
// before the response's next call): text blocks as content, tool_use blocks as native tool calls
// mapped to OpenCode's tools (Bash -> bash, Read -> read with filePath, ...);
// thinking blocks are dropped (OpenCode's OpenAI-compatible provider does
// not send reasoning back). tool_result blocks become role "tool" messages;
// text blocks of a user entry (tool notices, skill expansions, a
// mid-turn interjection) become user messages inside the turn, not
// requests. Workdir is the deepest directory that holds every absolute
// path the file tools touched. Unknown blocks and entries are reported and
// skipped.
func ReadClaudeCode(b []byte, source, task string) (*chat.Trajectory, []Skip, error) {
	var raw struct {
		SessionID string          `json:"session_id"`
		Messages  []claudeMessage `json:"messages"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, nil, fmt.Errorf("%s: not a Claude Code session: %w", source, err)
	}
	return claudeTrajectory(raw.Messages, nil, source, task)
}

// claudeMessage is one message of a Claude Code session: content a string
// or Anthropic content blocks; ID is the API response's id, when logged;
// compacted marks a log's compaction summary (see ReadClaudeCodeLog).
type claudeMessage struct {
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	compacted bool
}

// claudeTrajectory converts a session's messages (see ReadClaudeCode);
// skips holds what was skipped before.
func claudeTrajectory(msgs []claudeMessage, skips []Skip, source, task string) (*chat.Trajectory, []Skip, error) {
	skip := func(i int, reason string) {
		skips = append(skips, Skip{Source: source, Record: fmt.Sprintf("messages[%d]", i), Reason: reason})
	}
	tr := &chat.Trajectory{Task: task, Format: "claude-code"}
	var turn *chat.Turn
	// The assistant message being merged: its index in turn.Messages (-1
	// for none), whether the entry before was assistant too, and its id.
	asst, merging, asstID := -1, false, ""
	var files []string
	for i, m := range msgs {
		if text, err := contentText(m.Content); err == nil {
			if m.Role == chat.RoleUser {
				tr.Turns = append(tr.Turns, chat.Turn{Request: text})
				if m.compacted { // the history restarts at the summary
					tr.Turns[len(tr.Turns)-1].Rebuilt = []chat.Rebuild{{}}
				}
				turn, asst = &tr.Turns[len(tr.Turns)-1], -1
				continue
			}
			if m.Role != chat.RoleAssistant {
				skip(i, fmt.Sprintf("role %q: unknown", m.Role))
				continue
			}
			m.Content, _ = json.Marshal([]claudeBlock{{Type: "text", Text: text}})
		}
		if turn == nil {
			skip(i, "entry before the first human request")
			continue
		}
		var blocks []claudeBlock
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			skip(i, "content: neither a string nor content blocks")
			continue
		}
		switch m.Role {
		case chat.RoleAssistant:
			if asst < 0 || !merging && (m.ID == "" || m.ID != asstID) {
				turn.Messages = append(turn.Messages, chat.Message{Role: chat.RoleAssistant})
				asst, asstID = len(turn.Messages)-1, m.ID
			}
			merging = true
			a := &turn.Messages[asst]
			for j, bl := range blocks {
				switch bl.Type {
				case "text":
					a.Content = joinText(a.Content, bl.Text)
				case "thinking", "redacted_thinking":
				case "tool_use":
					call, file, err := claudeCall(bl)
					if err != nil {
						skip(i, fmt.Sprintf("content[%d]: %v", j, err))
						continue
					}
					a.ToolCalls = append(a.ToolCalls, call)
					if path.IsAbs(file) {
						files = append(files, file)
					}
				default:
					skip(i, fmt.Sprintf("content[%d]: block type %q: unknown", j, bl.Type))
				}
			}
		case chat.RoleUser:
			merging = false
			var notes []string
			for j, bl := range blocks {
				switch bl.Type {
				case "tool_result":
					if bl.ToolUseID == "" {
						skip(i, fmt.Sprintf("content[%d]: tool_result without tool_use_id", j))
						continue
					}
					turn.Messages = append(turn.Messages, chat.Message{Role: chat.RoleTool, ToolCallID: bl.ToolUseID, Content: resultText(bl.Content)})
				case "text":
					notes = append(notes, bl.Text)
				default:
					skip(i, fmt.Sprintf("content[%d]: block type %q: unknown", j, bl.Type))
				}
			}
			// Text after the results: a user message may not sit between a
			// call and its result.
			for _, n := range notes {
				turn.Messages = append(turn.Messages, chat.Message{Role: chat.RoleUser, Content: n})
				asst = -1 // a later call may not go before the note
			}
		default:
			skip(i, fmt.Sprintf("role %q: unknown", m.Role))
		}
	}
	if len(tr.Turns) == 0 {
		return nil, skips, fmt.Errorf("%s: %w", source, ErrNoRequest)
	}
	fixes := 0
	for i := range tr.Turns {
		t := &tr.Turns[i]
		t.Messages = dropEmptyAssistant(t.Messages)
		var n int
		t.Messages, n = closeCalls(t.Messages)
		fixes += n
	}
	if fixes > 0 {
		skips = append(skips, Skip{Source: source, Record: "messages", Reason: fmt.Sprintf("%d unpaired tool calls or results fixed", fixes)})
	}
	tr.Workdir = commonDir(files)
	return tr, skips, nil
}

func joinText(a, b string) string {
	if a == "" {
		return strings.TrimSpace(b)
	}
	return a + "\n\n" + strings.TrimSpace(b)
}

// dropEmptyAssistant drops assistant messages left with neither text nor
// calls (a response that only thought).
func dropEmptyAssistant(ms []chat.Message) []chat.Message {
	out := ms[:0]
	for _, m := range ms {
		if m.Role == chat.RoleAssistant && m.Content == "" && len(m.ToolCalls) == 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// claudeCall maps a tool_use block to an OpenCode tool call; it also returns
// the file or directory the call names, if any.
func claudeCall(bl claudeBlock) (chat.ToolCall, string, error) {
	if bl.ID == "" || bl.Name == "" {
		return chat.ToolCall{}, "", fmt.Errorf("tool_use: id or name empty")
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(bl.Input, &in); err != nil || in == nil {
		return chat.ToolCall{}, "", fmt.Errorf("tool_use %s: input: not an object", bl.ID)
	}
	var file string
	for _, k := range []string{"file_path", "path"} {
		if v, ok := in[k]; ok {
			_ = json.Unmarshal(v, &file)
			break
		}
	}
	name, args := strings.ToLower(bl.Name), in
	if t, ok := claudeTools[bl.Name]; ok {
		name, args = t.name, map[string]json.RawMessage{}
		for k, v := range in {
			if to, ok := t.keys[k]; ok {
				args[to] = v
			}
		}
	}
	a, err := json.Marshal(args)
	if err != nil {
		return chat.ToolCall{}, "", fmt.Errorf("tool_use %s: %w", bl.ID, err)
	}
	return chat.ToolCall{ID: bl.ID, Type: "function", Function: chat.FunctionCall{Name: name, Arguments: string(a)}}, file, nil
}

// resultText flattens a tool_result content: a string, or blocks of text
// (tool_reference blocks render as the tool's name).
func resultText(raw json.RawMessage) string {
	if s, err := contentText(raw); err == nil {
		return s
	}
	var blocks []claudeBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "tool_reference":
			parts = append(parts, "tool: "+b.ToolName)
		default:
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

// commonDir is the deepest directory holding every path; for one path, its
// directory.
func commonDir(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	dir := path.Dir(path.Clean(paths[0]))
	for _, p := range paths[1:] {
		p = path.Clean(p)
		for dir != "/" && p != dir && !strings.HasPrefix(p, dir+"/") {
			dir = path.Dir(dir)
		}
	}
	if dir == "/" {
		return ""
	}
	return dir
}
