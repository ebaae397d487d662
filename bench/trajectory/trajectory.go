package trajectory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/rcm-dev/rcm/internal/chat"
)

// ErrNoRequest is the error of an import that found no human request: a
// log of something else (a subagent's own log, a session left empty).
var ErrNoRequest = errors.New("no human request")

// Skip reports a record an importer could not use; the record is skipped and
// the import goes on.
type Skip struct {
	Source string `json:"source"` // file or stream name
	Record string `json:"record"` // line, index or id of the record
	Reason string `json:"reason"`
}

func (s Skip) String() string {
	return fmt.Sprintf("%s: %s: %s", s.Source, s.Record, s.Reason)
}

// steps splits messages into steps: an assistant message and everything up
// to the next assistant message (its tool results, user interjections).
// Messages before the first assistant message open the first step.
func Steps(ms []chat.Message) [][]chat.Message {
	var out [][]chat.Message
	start := 0
	for i, m := range ms {
		if m.Role == chat.RoleAssistant && i > start {
			if HasAssistant(ms[start:i]) {
				out = append(out, ms[start:i])
				start = i
			}
		}
	}
	if start < len(ms) {
		out = append(out, ms[start:])
	}
	return out
}

func HasAssistant(ms []chat.Message) bool {
	for _, m := range ms {
		if m.Role == chat.RoleAssistant {
			return true
		}
	}
	return false
}

// closeCalls appends a tool result for every call of ms left without one
// (a run cut short) and drops tool results that answer no call, so that the
// history stays valid; it reports how many messages it added or dropped.
func closeCalls(ms []chat.Message) ([]chat.Message, int) {
	var out []chat.Message
	fixes := 0
	var pending []string
	flush := func() {
		for _, id := range pending {
			out = append(out, chat.Message{Role: chat.RoleTool, ToolCallID: id, Content: "(no result recorded)"})
			fixes++
		}
		pending = nil
	}
	for _, m := range ms {
		switch m.Role {
		case chat.RoleAssistant:
			flush()
			for _, c := range m.ToolCalls {
				pending = append(pending, c.ID)
			}
		case chat.RoleTool:
			i := slices.Index(pending, m.ToolCallID)
			if i < 0 {
				fixes++
				continue
			}
			pending = slices.Delete(pending, i, i+1)
		case chat.RoleUser:
			flush()
		}
		out = append(out, m)
	}
	flush()
	return out, fixes
}

// validateMessages checks roles and that every tool call is answered by a
// tool message before the next assistant or user message, and every tool
// message answers a pending call. Ids may repeat across a history.
func ValidateMessages(ms []chat.Message) error {
	pending := map[string]int{}
	open := func() error {
		for id := range pending {
			return fmt.Errorf("tool call %q: no tool result", id)
		}
		return nil
	}
	for i, m := range ms {
		switch m.Role {
		case chat.RoleAssistant:
			if err := open(); err != nil {
				return fmt.Errorf("messages[%d]: %w", i, err)
			}
			for j, c := range m.ToolCalls {
				if c.ID == "" || c.Function.Name == "" {
					return fmt.Errorf("messages[%d].tool_calls[%d]: id or function.name empty", i, j)
				}
				if !json.Valid([]byte(c.Function.Arguments)) {
					return fmt.Errorf("messages[%d].tool_calls[%d]: arguments: not JSON", i, j)
				}
				pending[c.ID]++
			}
		case chat.RoleTool:
			if pending[m.ToolCallID] == 0 {
				return fmt.Errorf("messages[%d]: tool_call_id %q: answers no pending call", i, m.ToolCallID)
			}
			if pending[m.ToolCallID]--; pending[m.ToolCallID] == 0 {
				delete(pending, m.ToolCallID)
			}
		case chat.RoleUser:
			if err := open(); err != nil {
				return fmt.Errorf("messages[%d]: %w", i, err)
			}
		default:
			return fmt.Errorf("messages[%d]: role: %q not assistant, tool or user", i, m.Role)
		}
	}
	if err := open(); err != nil {
		return fmt.Errorf("messages: %w", err)
	}
	return nil
}

// jsonl reads a JSONL log (Claude Code's session, Codex's rollout) line by
// line, for lines as long as the log.
type jsonl struct{ sc *bufio.Scanner }

func newJSONL(b []byte) *jsonl {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), len(b)+1)
	return &jsonl{sc}
}

// lines yields each non-blank line, trimmed, with its number from 1.
func (l *jsonl) lines() iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		for n := 1; l.sc.Scan(); n++ {
			if line := bytes.TrimSpace(l.sc.Bytes()); len(line) > 0 && !yield(n, line) {
				return
			}
		}
	}
}

// err is what stopped the reading, nil at the log's end.
func (l *jsonl) err() error { return l.sc.Err() }
