package trajectory

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/rcm-dev/rcm/internal/chat"
)

var (
	uploadedFiles = regexp.MustCompile(`(?s)<uploaded_files>\s*(\S+)\s*</uploaded_files>`)
	issueDesc     = regexp.MustCompile(`(?s)<issue_description>(.*?)</issue_description>`)
)

// ReadOpenHands converts an OpenHands trajectory's fncall_messages (native
// OpenAI tool calls) into a Trajectory with one turn: the first user
// message's <issue_description> is the request, the rest its answer, ending
// with fncall_response's final message (less its "finish" call, OpenHands'
// end-of-run signal: an OpenCode turn ends with a message without calls). Tool calls keep their recorded names
// (execute_bash, str_replace_editor) and ids; OpenHands restarts ids
// (toolu_01, ...) in every trajectory, so interleaved sessions hold duplicate
// ids, as the proxy must expect. Workdir is the <uploaded_files> path
// (/workspace/django__django__3.0). Malformed messages are dropped and
// reported; tool results left without their call are dropped, calls left
// without a result get "(no result recorded)".
func ReadOpenHands(b []byte, source, task string) (*chat.Trajectory, []Skip, error) {
	var raw struct {
		Messages []json.RawMessage `json:"fncall_messages"`
		Response struct {
			Choices []struct {
				Message json.RawMessage `json:"message"`
			} `json:"choices"`
		} `json:"fncall_response"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, nil, fmt.Errorf("%s: not an OpenHands trajectory: %w", source, err)
	}
	if len(raw.Messages) == 0 {
		return nil, nil, fmt.Errorf("%s: fncall_messages: empty", source)
	}
	msgs := raw.Messages
	if len(raw.Response.Choices) > 0 && len(raw.Response.Choices[0].Message) > 0 {
		msgs = append(msgs[:len(msgs):len(msgs)], raw.Response.Choices[0].Message)
	}
	var skips []Skip
	tr := &chat.Trajectory{Task: task, Format: "openhands"}
	var turn *chat.Turn
	for i, rm := range msgs {
		m, err := chatMessage(rm)
		if err != nil {
			skips = append(skips, Skip{Source: source, Record: fmt.Sprintf("fncall_messages[%d]", i), Reason: err.Error()})
			continue
		}
		switch {
		case m.Role == chat.RoleSystem:
		case turn == nil && m.Role == chat.RoleUser:
			if w := uploadedFiles.FindStringSubmatch(m.Content); w != nil {
				tr.Workdir = w[1]
			}
			req := m.Content
			if d := issueDesc.FindStringSubmatch(m.Content); d != nil {
				req = d[1]
			}
			tr.Turns = append(tr.Turns, chat.Turn{Request: strings.TrimSpace(req)})
			turn = &tr.Turns[0]
		case turn == nil:
			skips = append(skips, Skip{Source: source, Record: fmt.Sprintf("fncall_messages[%d]", i), Reason: "message before the task's first user message"})
		default:
			if i == len(raw.Messages) { // the final response
				m.ToolCalls = slices.DeleteFunc(m.ToolCalls, func(c chat.ToolCall) bool { return c.Function.Name == "finish" })
			}
			turn.Messages = append(turn.Messages, m)
		}
	}
	if turn == nil {
		return nil, skips, fmt.Errorf("%s: no user message with the task", source)
	}
	var fixes int
	if turn.Messages, fixes = closeCalls(turn.Messages); fixes > 0 {
		skips = append(skips, Skip{Source: source, Record: "fncall_messages", Reason: fmt.Sprintf("%d unpaired tool calls or results fixed", fixes)})
	}
	if !HasAssistant(turn.Messages) {
		return nil, skips, fmt.Errorf("%s: no usable assistant message", source)
	}
	return tr, skips, nil
}

// chatMessage decodes one OpenAI chat message; content may be a string or a
// list of text parts. Other fields (name, ...) are dropped.
func chatMessage(raw json.RawMessage) (chat.Message, error) {
	var m struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  []chat.ToolCall `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return chat.Message{}, fmt.Errorf("not a chat message: %w", err)
	}
	text, err := contentText(m.Content)
	if err != nil {
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(m.Content, &parts) != nil {
			return chat.Message{}, fmt.Errorf("content: neither a string nor a list of parts")
		}
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		text = b.String()
	}
	out := chat.Message{Role: m.Role, Content: text, ToolCallID: m.ToolCallID}
	switch m.Role {
	case chat.RoleSystem, chat.RoleUser:
	case chat.RoleAssistant:
		for j, c := range m.ToolCalls {
			if c.ID == "" || c.Function.Name == "" || !json.Valid([]byte(c.Function.Arguments)) {
				return chat.Message{}, fmt.Errorf("tool_calls[%d]: id, name or arguments missing or invalid", j)
			}
			if c.Type == "" {
				c.Type = "function"
			}
			out.ToolCalls = append(out.ToolCalls, c)
		}
	case chat.RoleTool:
		if m.ToolCallID == "" {
			return chat.Message{}, fmt.Errorf("tool message: tool_call_id: empty")
		}
	default:
		return chat.Message{}, fmt.Errorf("role %q: unknown", m.Role)
	}
	return out, nil
}
