package bench

import (
	"fmt"
	"slices"
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

// Trajectory is a recorded agent run converted into OpenAI chat messages, as
// OpenCode would send them.
type Trajectory struct {
	Task   string // the task id (SWE-bench instance id, or session name)
	Format string // source format, see Task.Source
	// Workdir is the repository root the agent worked in, "" if unknown.
	Workdir string
	Turns   []Turn
}

// Turn is one human request and the messages that answer it.
type Turn struct {
	Request  string
	Messages []Message
}

// steps splits messages into steps: an assistant message and everything up
// to the next assistant message (its tool results, user interjections).
// Messages before the first assistant message open the first step.
func steps(ms []Message) [][]Message {
	var out [][]Message
	start := 0
	for i, m := range ms {
		if m.Role == RoleAssistant && i > start {
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

func hasAssistant(ms []Message) bool {
	for _, m := range ms {
		if m.Role == RoleAssistant {
			return true
		}
	}
	return false
}

// closeCalls appends a tool result for every call of ms left without one
// (a run cut short) and drops tool results that answer no call, so that the
// history stays valid; it reports how many messages it added or dropped.
func closeCalls(ms []Message) ([]Message, int) {
	var out []Message
	fixes := 0
	var pending []string
	flush := func() {
		for _, id := range pending {
			out = append(out, Message{Role: RoleTool, ToolCallID: id, Content: "(no result recorded)"})
			fixes++
		}
		pending = nil
	}
	for _, m := range ms {
		switch m.Role {
		case RoleAssistant:
			flush()
			for _, c := range m.ToolCalls {
				pending = append(pending, c.ID)
			}
		case RoleTool:
			i := slices.Index(pending, m.ToolCallID)
			if i < 0 {
				fixes++
				continue
			}
			pending = slices.Delete(pending, i, i+1)
		case RoleUser:
			flush()
		}
		out = append(out, m)
	}
	flush()
	return out, fixes
}
