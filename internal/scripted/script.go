package scripted

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rcm-dev/rcm/transcript"
)

// ToolCall is one function call in a reply.
type ToolCall struct {
	ID        string // empty: call_<n>, numbered per server
	Name      string
	Arguments string // the arguments' JSON text; empty: {}
	// Custom makes it a custom tool call, which only the Responses API
	// carries (Codex's exec tool takes JavaScript): Arguments is its
	// free-form input, sent as it is.
	Custom bool
}

// Usage is the token accounting a reply reports.
type Usage struct {
	Prompt     int
	Completion int
}

// Reply is one scripted answer.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	// Status other than 0 or 200 answers an error with ErrorBody, or an
	// OpenAI error object when ErrorBody is empty.
	Status    int
	ErrorBody string
	// Delay waits before the response headers; ChunkDelay between SSE events.
	Delay      time.Duration
	ChunkDelay time.Duration
	// Usage nil: an estimate of about four bytes per token.
	Usage *Usage
	// Hang sends the headers and the first chunk, then blocks until the
	// client goes away.
	Hang bool
}

func (r Reply) failed() bool { return r.Status != 0 && r.Status != 200 }

// Match selects calls; every non-empty field must hold.
type Match struct {
	User    string `json:"user,omitempty"`    // substring of the last user message
	Tool    string `json:"tool,omitempty"`    // substring of the last tool result of the current turn
	System  string `json:"system,omitempty"`  // substring of the system prompt
	Kind    string `json:"kind,omitempty"`    // agent, title, compaction, subagent
	Last    string `json:"last,omitempty"`    // role of the final message: user, tool, assistant
	Session string `json:"session,omitempty"` // x-session-id, exactly
}

// Rule answers calls that match When, at most Times times (0: unlimited).
type Rule struct {
	When  Match
	Reply Reply
	// Answer, when set, makes the reply from the call instead of Reply
	// (scripts built in Go: a reply that depends on what the call says).
	// ok false passes the call on to the next rule, and the call does not
	// count against Times. It runs under the server's lock, so it must
	// not call the server's methods.
	Answer func(c Call) (r Reply, ok bool)
	Times  int
}

// Script is what a Server answers from: rules tried in order, then Default.
type Script struct {
	Models  []string // ids listed by GET /models
	Rules   []Rule
	Default Reply
	// Hold keeps an HTTP stream open this long after its last event,
	// unless the client leaves first, as an API may end its stream some
	// time after the terminal event (Codex closes the connection once it
	// has read response.completed).
	Hold time.Duration
}

// kinds are the call kinds a Match may name.
var kinds = []transcript.Kind{transcript.Agent, transcript.Title, transcript.Compaction, transcript.Subagent}

var lastRoles = []string{"user", "tool", "assistant"}

// Validate reports the first invalid rule or reply, naming its index and field.
func (s Script) Validate() error {
	for i, r := range s.Rules {
		if err := r.validate(); err != nil {
			return fmt.Errorf("scripted: rule %d: %w", i, err)
		}
	}
	if err := s.Default.validate(); err != nil {
		return fmt.Errorf("scripted: default.%w", err)
	}
	if s.Hold < 0 {
		return fmt.Errorf("scripted: hold: %v is negative", s.Hold)
	}
	return nil
}

func (r Rule) validate() error {
	if k := r.When.Kind; k != "" && !slices.ContainsFunc(kinds, func(x transcript.Kind) bool { return x.String() == k }) {
		return fmt.Errorf("when.kind: unknown kind %q (want one of %s)", k, kindNames())
	}
	if l := r.When.Last; l != "" && !slices.Contains(lastRoles, l) {
		return fmt.Errorf("when.last: unknown role %q (want one of %s)", l, strings.Join(lastRoles, ", "))
	}
	if r.Times < 0 {
		return fmt.Errorf("times: %d is negative", r.Times)
	}
	if err := r.Reply.validate(); err != nil {
		return fmt.Errorf("reply.%w", err)
	}
	return nil
}

func (r Reply) validate() error {
	switch {
	case r.Status != 0 && (r.Status < 200 || r.Status > 599):
		return fmt.Errorf("status: %d is not an HTTP status in 200..599", r.Status)
	case r.ErrorBody != "" && !r.failed():
		return errors.New("error: set on a successful reply (give a status other than 200)")
	case r.Delay < 0:
		return fmt.Errorf("delay: %v is negative", r.Delay)
	case r.ChunkDelay < 0:
		return fmt.Errorf("chunk_delay: %v is negative", r.ChunkDelay)
	case r.Usage != nil && (r.Usage.Prompt < 0 || r.Usage.Completion < 0):
		return errors.New("usage: negative token count")
	}
	for i, c := range r.ToolCalls {
		if c.Name == "" {
			return fmt.Errorf("tool_calls[%d].name: empty", i)
		}
	}
	return nil
}

func kindNames() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.String()
	}
	return strings.Join(names, ", ")
}
