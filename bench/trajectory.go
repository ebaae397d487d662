package bench

import (
	"fmt"
	"slices"

	"github.com/rcm-dev/rcm/internal/chat"
)

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
func steps(ms []chat.Message) [][]chat.Message {
	var out [][]chat.Message
	start := 0
	for i, m := range ms {
		if m.Role == chat.RoleAssistant && i > start {
			if hasAssistant(ms[start:i]) {
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

func hasAssistant(ms []chat.Message) bool {
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
