package transcript

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Texts by which Claude Code marks its own parts of a conversation, matched
// by prefix or substring so that small wording changes elsewhere in a
// prompt do not break detection.
const (
	// SummarizeInstruction is in the text Claude Code appends to the last
	// user message (manual /compact) or sends as one (auto-compaction).
	SummarizeInstruction = "Your task is to create a detailed summary of the conversation so far"
	// continuedPrefix opens the user message that holds the summary after
	// a compaction.
	continuedPrefix = "This session is being continued from a previous conversation"
)

// harnessBlocks are the prefixes of the text blocks Claude Code adds to a
// user message besides what the user typed (context reminders, the echo of
// a slash command): they are not part of the request's text.
var harnessBlocks = []string{"<system-reminder>", "<local-command-caveat>", "<command-name>", "<local-command-stdout>"}

// parseMessages reads the messages array of an Anthropic Messages body.
// Each message's text is its text blocks (less the harness's own) joined by
// "\n"; tool_use blocks are its ToolCalls (Arguments the raw input) and
// tool_result blocks its Results.
func parseMessages(body []byte) (*Transcript, error) {
	return parseArray(body, AnthropicMessages, messagesItem)
}

// messagesItem reads a Messages message (see readMessage).
func messagesItem(m *Message, rest string) (int, error) { return readMessage(m, rest, messagesField) }

func messagesField(m *Message, key, val string, _ int) {
	if key != `"content"` {
		return
	}
	c := gjson.Parse(val)
	if c.Type == gjson.String {
		addText(m, c.Str)
		return
	}
	c.ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").Str {
		case "text":
			addText(m, b.Get("text").String())
		case "tool_use", "server_tool_use":
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: b.Get("id").String(), Name: b.Get("name").String(), Arguments: b.Get("input").Raw})
		case "tool_result":
			m.Results = append(m.Results, ToolResult{ID: b.Get("tool_use_id").String(), content: b.Get("content").Raw})
		}
		return true
	})
}

// addText adds a text block's text to the message's unless the harness
// wrote it.
func addText(m *Message, s string) {
	for _, p := range harnessBlocks {
		if strings.HasPrefix(s, p) {
			return
		}
	}
	if m.text != "" {
		m.text += "\n"
	}
	m.text += s
}

// messagesKind tells Claude Code's summarisation call by its instruction in
// the last user message.
func messagesKind(t *Transcript, _ Hints) Kind {
	// OpenCode's side calls through its Anthropic provider say what they
	// are in the system field, as they do in chat's system message (which
	// a Messages body may carry too, as a leading role "system" entry).
	switch system := contentText(gjson.GetBytes(t.Body, "system")); {
	case strings.HasPrefix(system, titlePrompt):
		return Title
	case strings.HasPrefix(system, compactionPrompt):
		return Compaction
	}
	if k := classify(t); k != Agent {
		return k
	}
	for i := len(t.Messages) - 1; i >= 0; i-- {
		m := &t.Messages[i]
		if m.Role == "user" {
			if strings.Contains(m.text, SummarizeInstruction) {
				return Compaction
			}
			break
		}
	}
	return Agent
}

// opensMessagesTurn: a user message with text opens a turn, unless it
// begins by answering tool calls (Claude Code's tool_result messages, which
// may carry text after the results); the rest follows the chat rule
// (Claude Code's message holding a compaction's summary opens a Summary
// turn).
func opensMessagesTurn(ms []Message, i int) (TurnKind, string, bool) {
	m := &ms[i]
	if m.Role != "user" || strings.TrimSpace(m.text) == "" || firstBlockIs(m.Raw, "tool_result") {
		return 0, "", false
	}
	return opensTurn(ms, i)
}

// firstBlockIs reports whether the message's content is a block list whose
// first block has type typ.
func firstBlockIs(raw []byte, typ string) bool {
	return gjson.GetBytes(raw, "content.0.type").Str == typ
}
