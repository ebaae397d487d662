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
}
