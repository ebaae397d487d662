package trajectory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/rcm-dev/rcm/internal/chat"
)

// miniSWEWorkdir is the repository root of mini-swe-agent's SWE-bench runs.
const miniSWEWorkdir = "/testbed"

var (
	bashBlock  = regexp.MustCompile("(?s)```bash[ \t]*\r?\n(.*?)```")
	returnCode = regexp.MustCompile(`(?s)^\s*<returncode>(-?\d+)</returncode>\s*<output>(.*?)</output>\s*$`)
	prDesc     = regexp.MustCompile(`(?s)<pr_description>(.*?)</pr_description>`)
)

// ReadMiniSWE converts a mini-swe-agent trajectory (trajectory_format
// "mini-swe-agent-1") into a Trajectory with one turn: the issue from
// <pr_description>, then each assistant message with exactly one fenced bash
// block as an assistant message calling OpenCode's bash tool (arguments
// {"command", "description", "workdir"}; the text around the block, less
// its "THOUGHT:" label, as content) and the user message after it as the
// tool result (the <output> text, "exit code: N" appended when N is not 0).
// Assistant messages with no or several bash blocks, together with the
// format-error reply they drew, are dropped and reported: OpenCode's native
// tool calling has no such exchange. Tool-call ids are derived from the task
// id, so that ids differ between tasks.
func ReadMiniSWE(b []byte, source string) (*chat.Trajectory, []Skip, error) {
	var raw struct {
		InstanceID string `json:"instance_id"`
		Format     string `json:"trajectory_format"`
		Messages   []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, nil, fmt.Errorf("%s: not a mini-swe-agent trajectory: %w", source, err)
	}
	if raw.InstanceID == "" {
		return nil, nil, fmt.Errorf("%s: instance_id: empty", source)
	}
	if raw.Format != "" && !strings.HasPrefix(raw.Format, "mini-swe-agent") {
		return nil, nil, fmt.Errorf("%s: trajectory_format %q: not mini-swe-agent", source, raw.Format)
	}
	var skips []Skip
	skip := func(i int, reason string) {
		skips = append(skips, Skip{Source: source, Record: fmt.Sprintf("messages[%d]", i), Reason: reason})
	}
	tr := &chat.Trajectory{Task: raw.InstanceID, Format: "mini-swe-agent-1", Workdir: miniSWEWorkdir}
	idBase := callIDBase(raw.InstanceID)
	var turn *chat.Turn
	pending := ""      // id of the call awaiting its output
	dropReply := false // the next user message answers a dropped message
	calls := 0
	for i, m := range raw.Messages {
		text, err := contentText(m.Content)
		if err != nil {
			skip(i, err.Error())
			continue
		}
		switch {
		case m.Role == chat.RoleSystem:
		case turn == nil && m.Role == chat.RoleUser:
			issue := prDesc.FindStringSubmatch(text)
			if issue == nil {
				return nil, skips, fmt.Errorf("%s: messages[%d]: no <pr_description> in the first user message", source, i)
			}
			tr.Turns = append(tr.Turns, chat.Turn{Request: strings.TrimSpace(strings.TrimPrefix(
				strings.TrimSpace(issue[1]), "Consider the following PR description:"))})
			turn = &tr.Turns[0]
		case turn == nil:
			skip(i, "message before the task's first user message")
		case m.Role == chat.RoleAssistant:
			if pending != "" {
				skip(i-1, "bash call without output")
				turn.Messages = append(turn.Messages, chat.Message{Role: chat.RoleTool, ToolCallID: pending, Content: "(no result recorded)"})
				pending = ""
			}
			blocks := bashBlock.FindAllStringSubmatchIndex(text, -1)
			if len(blocks) != 1 {
				skip(i, fmt.Sprintf("%d bash blocks, want 1: dropped with its format-error reply", len(blocks)))
				dropReply = true
				continue
			}
			dropReply = false
			calls++
			cmd := strings.TrimSpace(text[blocks[0][2]:blocks[0][3]])
			thought := strings.TrimSpace(text[:blocks[0][0]] + text[blocks[0][1]:])
			thought = strings.TrimSpace(strings.TrimPrefix(thought, "THOUGHT:"))
			pending = fmt.Sprintf("call_%s_%d", idBase, calls)
			turn.Messages = append(turn.Messages, chat.Message{
				Role: chat.RoleAssistant, Content: thought,
				ToolCalls: []chat.ToolCall{bashCall(pending, cmd, describe(thought), miniSWEWorkdir)},
			})
		case m.Role == chat.RoleUser && dropReply:
			dropReply = false
		case m.Role == chat.RoleUser && pending != "":
			turn.Messages = append(turn.Messages, chat.Message{Role: chat.RoleTool, ToolCallID: pending, Content: toolOutput(text)})
			pending = ""
		default:
			skip(i, fmt.Sprintf("role %q message answers no bash call", m.Role))
		}
	}
	if turn == nil {
		return nil, skips, fmt.Errorf("%s: no user message with the task", source)
	}
	if pending != "" {
		turn.Messages = append(turn.Messages, chat.Message{Role: chat.RoleTool, ToolCallID: pending, Content: "(no result recorded)"})
	}
	if !HasAssistant(turn.Messages) {
		return nil, skips, fmt.Errorf("%s: no usable assistant message", source)
	}
	return tr, skips, nil
}

// contentText reads a message content that is a string (or null).
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errors.New("content: not a string")
	}
	return s, nil
}

// toolOutput renders a "<returncode>N</returncode><output>...</output>" reply
// as OpenCode's bash tool would return it; other replies pass unchanged.
func toolOutput(text string) string {
	m := returnCode.FindStringSubmatch(text)
	if m == nil {
		return text
	}
	out := strings.TrimPrefix(m[2], "\n")
	if rc, _ := strconv.Atoi(m[1]); rc != 0 {
		out += fmt.Sprintf("\nexit code: %d", rc)
	}
	return out
}

// bashCall is a call of OpenCode's bash tool.
func bashCall(id, command, description, workdir string) chat.ToolCall {
	args := struct {
		Command     string `json:"command"`
		Description string `json:"description,omitempty"`
		Workdir     string `json:"workdir,omitempty"`
	}{command, description, workdir}
	return chat.ToolCall{ID: id, Type: "function", Function: chat.FunctionCall{Name: "bash", Arguments: mustJSON(args)}}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called on plain structs and maps of strings
	}
	return string(b)
}

// describe makes a bash tool description (OpenCode asks for 5-10 words) from
// the first sentence of the thought.
func describe(thought string) string {
	s, _, _ := strings.Cut(thought, "\n")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(strings.TrimSpace(s), ".")
	words := strings.Fields(s)
	if len(words) > 10 {
		words = words[:10]
	}
	return strings.Join(words, " ")
}

// callIDBase is a short stable hash of a task id, so that converted tool-call
// ids of different tasks differ as a provider's would.
func callIDBase(task string) string {
	h := sha256.Sum256([]byte(task))
	return hex.EncodeToString(h[:4])
}
