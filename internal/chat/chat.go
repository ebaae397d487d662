package chat

// Message is one OpenAI chat-completions message, as a harness sends it in
// the "messages" array. Content is always present (OpenCode sends
// "content": "" on assistant messages that only call tools).
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a native OpenAI tool call of an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the tool and carries its arguments as a JSON string.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Chat roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

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
	// Compacted: the harness compacted its history here (Claude Code's
	// /compact or auto-compaction): the request is the summary, and from
	// this turn on the harness sends the system prompt and the turns from
	// this one, none before it.
	Compacted bool `json:",omitempty"`
}

// ModelCall is one model call of a replayed session: the full history the
// harness sends and the recorded assistant message answering it.
type ModelCall struct {
	Index    int // counts the calls from 0
	Step     int // the turn's index
	Messages []Message
	// From is where Messages[1:] sit in the session's whole history (the
	// system prompt, then each turn's request and messages, as the last
	// call of a session that never compacted holds them): 1, or the
	// index of the last compacted turn's request.
	From int
	// Response is the recorded answer; the zero Message when the turn has
	// no assistant message (a real log's turn the model never answered, an
	// aider command): the call is then the turn's request alone, so that
	// every turn is seen once.
	Response Message
}

// Replay lays turns out as the model calls of one session, as a harness
// sends them: the system prompt, each turn's request, and the turn's
// messages; a call ends before each assistant message, which is its
// Response, and a turn without one still makes one call. From a Compacted
// turn on, the history restarts at the system prompt. Calls share backing
// arrays; do not modify elements.
func Replay(system string, turns []Turn) []ModelCall {
	history := []Message{{Role: RoleSystem, Content: system}}
	from, whole := 1, 1 // where history[1:] starts in the whole history, and its length
	var calls []ModelCall
	for i, turn := range turns {
		if turn.Compacted && len(history) > 1 {
			history, from = history[:1:1], whole
		}
		history = append(history, Message{Role: RoleUser, Content: turn.Request})
		n := len(calls)
		for _, m := range turn.Messages {
			if m.Role == RoleAssistant {
				calls = append(calls, ModelCall{Index: len(calls), Step: i,
					Messages: history[:len(history):len(history)], Response: m, From: from})
			}
			history = append(history, m)
		}
		if len(calls) == n {
			at := len(history) - len(turn.Messages) // up to the turn's request
			calls = append(calls, ModelCall{Index: len(calls), Step: i, Messages: history[:at:at], From: from})
		}
		whole += 1 + len(turn.Messages)
	}
	return calls
}
