package overhead

import (
	"encoding/json"
	"fmt"
	"strings"
)

// session builds the growing history of one agent session: an OpenCode-shaped
// chat-completions body of about size bytes on the first call, one tool step
// (an assistant bash call and its result) longer on every call after.
type session struct {
	prefix []byte   // {"model":...,"messages":[system, request
	steps  [][]byte // ,{assistant},{tool} pairs, already encoded
	step   int      // bytes of one step's tool output
	n      int      // steps sent so far
}

const systemPrompt = `You are opencode, an interactive CLI agent. Working directory: /home/dev/project. Is directory a git repo: yes. Platform: linux.`

func newSession(size int) *session {
	s := &session{step: max(size/64, 256)}
	s.prefix = fmt.Appendf(nil, `{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":%s},{"role":"user","content":"Fix the failing date parser test in src/dates.py and keep the public API unchanged."}`,
		quote(systemPrompt))
	for s.len() < size {
		s.grow()
	}
	return s
}

// grow appends one tool step.
func (s *session) grow() {
	id := fmt.Sprintf("call_%d", len(s.steps))
	out := fmt.Sprintf("step %d\n%s", len(s.steps), strings.Repeat("line of tool output from pytest -q\n", s.step/35+1))
	args := fmt.Sprintf(`{"command":"pytest -q tests/test_dates.py -k case_%d","workdir":"/home/dev/project"}`, len(s.steps))
	s.steps = append(s.steps, fmt.Appendf(nil,
		`,{"role":"assistant","content":"","tool_calls":[{"id":%q,"type":"function","function":{"name":"bash","arguments":%s}}]},{"role":"tool","tool_call_id":%q,"content":%s}`,
		id, quote(args), id, quote(out)))
}

func (s *session) len() int {
	n := len(s.prefix) + 2
	for _, st := range s.steps {
		n += len(st)
	}
	return n
}

// next returns the body of the session's next call.
func (s *session) next() []byte {
	if s.n > 0 {
		s.grow()
	}
	s.n++
	b := make([]byte, 0, s.len())
	b = append(b, s.prefix...)
	for _, st := range s.steps {
		b = append(b, st...)
	}
	return append(b, ']', '}')
}

func quote(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}
