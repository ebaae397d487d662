package trajectory

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rcm-dev/rcm/internal/chat"
)

// ReadClaudeCodeLog converts a session log as Claude Code writes it
// (~/.claude/projects/PROJECT/SESSION.jsonl: one JSON object per line,
// {"type": "user"|"assistant", "message": {role, content}, "cwd", ...})
// into a Trajectory, as ReadClaudeCode converts its messages, with one
// difference: every user line holding text is a request, whether its
// content is a string or text blocks (joined by newlines, after the line's
// tool results), so that harness artifacts Claude Code logs as user lines
// (slash-command expansions, local-command caveats, "[Request interrupted
// by user]") are requests too, as people labelling a log count them. Lines
// of other types (summaries, snapshots, system notes) are not messages,
// nor are a subagent's (isSidechain: its prompt is the agent's, not the
// person's, and the session holds only its result); a subagent's own log
// (agent-*.jsonl) so has no request (ErrNoRequest). A compaction's summary
// (isCompactSummary) is a request whose turn is rebuilt at its request
// (chat.Rebuild): Claude Code sends none of the turns before it again. A
// branch the person rewound past is left out, and each of its requests
// named in a skip (rewound).
// Workdir is the log's first cwd; without one, as ReadClaudeCode finds it.
func ReadClaudeCodeLog(b []byte, source, task string) (*chat.Trajectory, []Skip, error) {
	var lines []claudeLine
	var skips []Skip
	log := newJSONL(b)
	for n, line := range log.lines() {
		l := claudeLine{n: n}
		if err := json.Unmarshal(line, &l); err != nil {
			skips = append(skips, Skip{Source: source, Record: fmt.Sprintf("line %d", n), Reason: "not JSON: " + err.Error()})
			continue
		}
		lines = append(lines, l)
	}
	if err := log.err(); err != nil {
		return nil, skips, fmt.Errorf("%s: %w", source, err)
	}
	left := rewound(lines)
	var msgs []claudeMessage
	cwd := ""
	for i, l := range lines {
		if cwd == "" {
			cwd = l.Cwd
		}
		if l.Sidechain {
			continue // a subagent's conversation: the session sees its result only
		}
		if left[i] {
			if l.prompt() {
				skips = append(skips, Skip{Source: source, Record: fmt.Sprintf("line %d", l.n),
					Reason: fmt.Sprintf("rewound past: %q and what followed it are on a branch the conversation left (Claude Code sends none of it)", requestText(l.Message))})
			}
			continue
		}
		switch l.Type {
		case chat.RoleAssistant:
			msgs = append(msgs, l.Message)
		case chat.RoleUser:
			l.Message.compacted = l.Compact
			msgs = append(msgs, userLine(l.Message)...)
		}
	}
	tr, skips, err := claudeTrajectory(msgs, skips, source, task)
	if err == nil && cwd != "" {
		tr.Workdir = cwd
	}
	return tr, skips, err
}

// userLine splits a user line whose content blocks hold text into its
// other blocks (tool results) and a request of the text.
func userLine(m claudeMessage) []claudeMessage {
	var blocks []claudeBlock
	if json.Unmarshal(m.Content, &blocks) != nil {
		return []claudeMessage{m}
	}
	var texts []string
	var rest []claudeBlock
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			texts = append(texts, bl.Text)
		case "image", "document":
			// Attachments: the log keeps no text of them.
		default:
			rest = append(rest, bl)
		}
	}
	var out []claudeMessage
	if len(rest) > 0 {
		raw, _ := json.Marshal(rest) // blocks decoded from JSON encode again
		out = append(out, claudeMessage{Role: chat.RoleUser, Content: raw})
	}
	if len(texts) > 0 {
		raw, _ := json.Marshal(strings.Join(texts, "\n"))
		out = append(out, claudeMessage{Role: chat.RoleUser, Content: raw, compacted: m.compacted})
	}
	return out
}
