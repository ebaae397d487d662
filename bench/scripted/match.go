package scripted

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/rcm-dev/rcm/transcript"
)

// headerSession is the session header OpenCode sends on every call.
const headerSession = "X-Session-Id"

// workdirLabel opens the line of OpenCode's system prompt that names the
// session's working directory.
const workdirLabel = "Working directory:"

// call is what the rules see of one chat request.
type call struct {
	kind    string
	user    string // last user message
	tool    string // last tool result after the last user message
	system  string
	last    string // role of the final message
	session string
	workdir string
}

// readCall summarises a chat body. A body the transcript package cannot read
// (no messages array, say) is still answered: as an agent call with no text.
func readCall(body []byte, h http.Header) call {
	c := call{kind: transcript.Agent.String(), session: h.Get(headerSession)}
	t, err := transcript.Parse(transcript.OpenAIChat, body, h)
	if err != nil {
		return c
	}
	c.kind = t.Kind.String()
	var system []string
	for i := range t.Messages {
		m := &t.Messages[i]
		switch m.Role {
		case "system", "developer":
			system = append(system, m.Text())
		case "user":
			c.user, c.tool = m.Text(), ""
		case "tool":
			c.tool = m.Text()
		}
		c.last = m.Role
	}
	c.system = strings.Join(system, "\n")
	c.workdir = workdir(c.system)
	return c
}

// workdir finds "Working directory: /path" in a system prompt.
func workdir(system string) string {
	i := strings.Index(system, workdirLabel)
	if i < 0 {
		return ""
	}
	line := system[i+len(workdirLabel):]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	return strings.TrimSpace(line)
}

func (m Match) matches(c call) bool {
	return strings.Contains(c.user, m.User) &&
		strings.Contains(c.tool, m.Tool) &&
		strings.Contains(c.system, m.System) &&
		(m.Kind == "" || m.Kind == c.kind) &&
		(m.Last == "" || m.Last == c.last) &&
		(m.Session == "" || m.Session == c.session)
}

// expand fills in {{workdir}}: verbatim in text, JSON-escaped in arguments.
func (r Reply) expand(c call) Reply {
	const tmpl = "{{workdir}}"
	if c.workdir == "" {
		return r
	}
	r.Text = strings.ReplaceAll(r.Text, tmpl, c.workdir)
	quoted, _ := json.Marshal(c.workdir) // a string always marshals
	escaped := string(quoted[1 : len(quoted)-1])
	calls := make([]ToolCall, len(r.ToolCalls))
	for i, tc := range r.ToolCalls {
		tc.Arguments = strings.ReplaceAll(tc.Arguments, tmpl, escaped)
		calls[i] = tc
	}
	r.ToolCalls = calls
	return r
}
