package transcript

// NewMessage builds the message ParseReply should return, for the external
// tests (Message's decoded text is unexported).
func NewMessage(role, text string, calls []ToolCall) Message {
	return Message{Role: role, text: text, ToolCalls: calls}
}

// MaxReplyCalls is maxReplyCalls, for the external tests.
const MaxReplyCalls = maxReplyCalls
