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
	// Rebuilt are the points, in order, where the harness compacted its
	// history during this turn and sent a rebuilt one from then on.
	Rebuilt []Rebuild `json:",omitempty"`
}

// Compacted reports whether the harness compacted its history in this turn.
func (t Turn) Compacted() bool { return len(t.Rebuilt) > 0 }

// Rebuild is one compaction of a turn: from the turn's item At on (0 is
// its request, k+1 is Messages[k], 1+len(Messages) its end: the turns
// after it), the harness sends the system prompt, History, and the items
// since, none of the history before. Claude Code restarts at the request
// that holds its summary (At 0, no History); Codex sends the person's
// earlier requests and its summary (History) in place of the history.
type Rebuild struct {
	At      int
	History []Message `json:",omitempty"`
}

// ModelCall is one model call of a replayed session: the full history the
// harness sends and the recorded assistant message answering it.
type ModelCall struct {
	Index    int // counts the calls from 0
	Step     int // the turn's index
	Messages []Message
	// From is where Messages[1:] sit in the session's whole history
	// (Layout.History): 1, or where the latest rebuild's history starts.
	From int
	// Response is the recorded answer; the zero Message when the turn has
	// no assistant message (a real log's turn the model never answered, an
	// aider command): the call is then the turn's request alone, so that
	// every turn is seen once.
	Response Message
}

// Layout is a session laid out as its harness sent it.
type Layout struct {
	Calls []ModelCall
	// History is the whole history the calls' From index: the system
	// prompt, then each turn's request and messages, with each rebuild's
	// History before the item it precedes.
	History []Message
	// Turn is per History message the turn it belongs to: -1 for the
	// system prompt; in a rebuild's History, a copy of an earlier request
	// is that request's turn, the rest (a summary) -1.
	Turn    []int
	Request []int // per turn, its request's index in History
}

// Lay lays turns out as the model calls of one session, as a harness
// sends them: the system prompt, each turn's request, and the turn's
// messages; a call ends before each assistant message, which is its
// Response, and a turn without one still makes one call, up to its
// request. At a Rebuild the history restarts at the system prompt and the
// rebuild's History. Calls share backing arrays; do not modify elements.
func Lay(system string, turns []Turn) Layout {
	sys := Message{Role: RoleSystem, Content: system}
	l := Layout{History: []Message{sys}, Turn: []int{-1}}
	sent, from := []Message{sys}, 1 // what the next call sends; where sent[1:] starts in History
	add := func(m Message, turn int) {
		sent = append(sent, m)
		l.History, l.Turn = append(l.History, m), append(l.Turn, turn)
	}
	asked := map[string]int{} // a request's text -> its latest turn
	for i, turn := range turns {
		n, rb := len(l.Calls), 0
		var upTo []Message // the history up to the turn's request
		upFrom := from
		for j := 0; j <= len(turn.Messages)+1; j++ {
			for ; rb < len(turn.Rebuilt) && turn.Rebuilt[rb].At <= j; rb++ {
				sent, from = sent[:1:1], len(l.History)
				for _, m := range turn.Rebuilt[rb].History {
					t, ok := asked[m.Content]
					if !ok || m.Role != RoleUser {
						t = -1
					}
					add(m, t)
				}
			}
			switch {
			case j == 0:
				l.Request = append(l.Request, len(l.History))
				add(Message{Role: RoleUser, Content: turn.Request}, i)
				asked[turn.Request] = i
				upTo, upFrom = sent[:len(sent):len(sent)], from
			case j <= len(turn.Messages):
				m := turn.Messages[j-1]
				if m.Role == RoleAssistant {
					l.Calls = append(l.Calls, ModelCall{Index: len(l.Calls), Step: i,
						Messages: sent[:len(sent):len(sent)], Response: m, From: from})
				}
				add(m, i)
			}
		}
		if len(l.Calls) == n {
			l.Calls = append(l.Calls, ModelCall{Index: len(l.Calls), Step: i, Messages: upTo, From: upFrom})
		}
	}
	return l
}
