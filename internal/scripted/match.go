package scripted

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"unsafe"

	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
)

// headerSession is the session header OpenCode sends on every call.
const headerSession = "X-Session-Id"

// workdirLabel opens the line of OpenCode's system prompt that names the
// session's working directory.
const workdirLabel = "Working directory:"

// wire is the API a call came in on, told by its path.
type wire int

const (
	wireChat      wire = iota // .../chat/completions
	wireMessages              // .../messages
	wireResponses             // .../responses
)

func wireOf(path string) wire {
	switch {
	case strings.HasSuffix(path, "/messages"):
		return wireMessages
	case strings.HasSuffix(path, "/responses"):
		return wireResponses
	}
	return wireChat
}

// Call is what the rules see of one model call, and what Rule.Answer is
// given.
type Call struct {
	Kind    string   // agent, title, compaction, subagent; a Responses call may also be prewarm or remote-compaction
	User    string   // text of the last user message
	Tool    string   // text of the last tool result after it
	System  string   // the system prompts, joined by "\n"
	Last    string   // role of the final message that is not a system prompt: user, tool or assistant
	Session string   // the x-session-id header
	Tools   []string // names of the tools the call offers

	workdir string

	model                string
	stream, includeUsage bool
	quiet                bool // a Responses call with generate false: it asks for no output
}

// readCall reads what the rules see of a call on w: chat bodies by
// readChat, the other APIs' by the transcript package (the proxy's reading
// of them).
func readCall(w wire, body []byte, h http.Header) Call {
	switch w {
	case wireMessages:
		return readParsed(transcript.AnthropicMessages, body, h)
	case wireResponses:
		return readParsed(transcript.OpenAIResponses, body, h)
	}
	return readChat(body, h)
}

// readChat summarises a chat body in one pass over its top level and one
// over its messages, decoding only what a rule can look at: the system
// prompts, the last user message and the last tool result after it. Those
// few messages are read by the transcript package, as the proxy reads them
// (texts, and the call's kind from the leading system prompts), without
// parsing a long history. A body the transcript package cannot read (no
// messages array, say) is still answered: as an agent call with no text.
func readChat(body []byte, h http.Header) Call {
	c := Call{Kind: transcript.Agent.String(), Session: h.Get(headerSession)}
	var msgs gjson.Result
	seen := map[string]bool{} // the first of repeated keys counts, as in gjson.Get
	// Read without copying the body: nothing here writes to it, and the
	// server keeps it unchanged for as long as the results may live.
	gjson.Parse(unsafe.String(unsafe.SliceData(body), len(body))).ForEach(func(k, v gjson.Result) bool {
		if seen[k.Str] {
			return true
		}
		seen[k.Str] = true
		switch k.Str {
		case "model":
			c.model = v.String()
		case "stream":
			c.stream = v.Bool()
		case "stream_options":
			c.includeUsage = v.Get("include_usage").Bool()
		case "tools":
			c.Tools = toolNames(v, nil)
		case "messages":
			msgs = v
		}
		return true
	})
	if !msgs.IsArray() {
		return c
	}
	var lead, later []string // raw system messages: leading ones, and any after them
	var user, tool, last string
	ok, others := true, false
	msgs.ForEach(func(_, v gjson.Result) bool {
		var role string
		if role, ok = roleOf(v); !ok {
			return false
		}
		switch role {
		case "system", "developer":
			if others {
				later = append(later, v.Raw)
			} else {
				lead = append(lead, v.Raw)
			}
			return true
		case "user":
			user, tool = v.Raw, ""
		case "tool":
			tool = v.Raw
		}
		others, last = true, role
		return true
	})
	if !ok {
		return c
	}
	// The picked messages as a small body: the leading system prompts, a
	// stand-in for the first other message (so that later system prompts
	// do not count as leading), the later ones, the user message and the
	// tool result.
	picked := slices.Clone(lead)
	if others {
		picked = append(picked, `{"role":"assistant","content":""}`)
	}
	picked = append(picked, later...)
	at := len(picked)
	for _, m := range []string{user, tool} {
		if m != "" {
			picked = append(picked, m)
		}
	}
	mini := `{"messages":[` + strings.Join(picked, ",") + "]}"
	t, err := transcript.Parse(transcript.OpenAIChat, []byte(mini), transcript.OpenAIChat.Hints(h))
	if err != nil {
		return c
	}
	c.Kind, c.Last = t.Kind.String(), last
	var system []string
	for i := range t.Messages[:at] {
		if m := &t.Messages[i]; m.System() {
			system = append(system, m.Text())
		}
	}
	if user != "" {
		c.User = t.Messages[at].Text()
		at++
	}
	if tool != "" {
		c.Tool = t.Messages[at].Text()
	}
	c.System = strings.Join(system, "\n")
	c.workdir = workdir(c.System)
	return c
}

// readParsed reads a call by parsing its whole body in format f, as the
// proxy does. A Messages user message's tool_result blocks are tool
// results, and its text (less Claude Code's reminders) a user message
// after them; a Responses *_output item is a tool result, and what the
// transcript package counts as instructions (Codex's context messages, its
// additional_tools item) a system prompt; the Messages API's system field
// and the Responses API's instructions are system prompts too.
func readParsed(f transcript.Format, body []byte, h http.Header) Call {
	c := Call{Kind: transcript.Agent.String(), Session: h.Get(headerSession)}
	top := gjson.GetManyBytes(body, "model", "stream", "stream_options.include_usage", "tools", "generate")
	c.model, c.stream, c.includeUsage = top[0].String(), top[1].Bool(), top[2].Bool()
	c.Tools = toolNames(top[3], nil)
	c.quiet = f == transcript.OpenAIResponses && top[4].Type == gjson.False
	t, err := transcript.Parse(f, body, f.Hints(h))
	if err != nil {
		return c
	}
	c.Kind = t.Kind.String()
	var system []string
	if s := t.Instructions(); s != "" {
		system = append(system, s)
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		switch {
		case m.System():
			if s := m.Text(); s != "" {
				system = append(system, s)
			}
			// Codex offers its code-mode tools in an input item.
			if gjson.GetBytes(m.Raw, "type").Str == "additional_tools" {
				c.Tools = toolNames(gjson.GetBytes(m.Raw, "tools"), c.Tools)
			}
		case m.Role == "tool":
			c.Tool, c.Last = m.Text(), "tool"
		case m.Role == "user":
			for _, r := range m.Results {
				c.Tool, c.Last = r.Text(), "tool"
			}
			if s := m.Text(); s != "" || len(m.Results) == 0 {
				c.User, c.Tool, c.Last = s, "", "user"
			}
		default:
			c.Last = m.Role
		}
	}
	c.System = strings.Join(system, "\n")
	c.workdir = workdir(c.System)
	return c
}

// toolNames appends the names of the tools in a tools array to names:
// chat's function tools, the other APIs' named ones, and those inside
// namespaces (Codex's).
func toolNames(tools gjson.Result, names []string) []string {
	tools.ForEach(func(_, t gjson.Result) bool {
		f := gjson.GetMany(t.Raw, "tools", "name", "function.name")
		switch {
		case f[0].IsArray():
			names = toolNames(f[0], names)
		case f[1].Type == gjson.String:
			names = append(names, f[1].Str)
		case f[2].Type == gjson.String:
			names = append(names, f[2].Str)
		}
		return true
	})
	return names
}

// roleOf reads a message's role as the transcript package does: the last
// "role" member holding a string; ok is false for a message that is not an
// object with one.
func roleOf(m gjson.Result) (role string, ok bool) {
	if !m.IsObject() {
		return "", false
	}
	// Nearly always the member is there once, under that very key: found
	// without reading the rest of the message (a long tool output, say).
	if strings.Count(m.Raw, `"role"`) == 1 {
		r := gjson.Get(m.Raw, "role")
		key := strings.TrimRight(m.Raw[:max(r.Index, 0)], " \t\r\n")
		if k, colon := strings.CutSuffix(key, ":"); colon && strings.HasSuffix(strings.TrimRight(k, " \t\r\n"), `"role"`) {
			return r.Str, r.Type == gjson.String
		}
	}
	m.ForEach(func(k, v gjson.Result) bool {
		if k.Raw == `"role"` && v.Type == gjson.String {
			role, ok = v.Str, true
		}
		return true
	})
	return role, ok
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

func (m Match) matches(c Call) bool {
	return strings.Contains(c.User, m.User) &&
		strings.Contains(c.Tool, m.Tool) &&
		strings.Contains(c.System, m.System) &&
		(m.Kind == "" || m.Kind == c.Kind) &&
		(m.Last == "" || m.Last == c.Last) &&
		(m.Session == "" || m.Session == c.Session)
}

// expand fills in {{workdir}}: verbatim in text, JSON-escaped in
// arguments (a custom call's input is no JSON: verbatim too).
func (r Reply) expand(c Call) Reply {
	const tmpl = "{{workdir}}"
	if c.workdir == "" {
		return r
	}
	r.Text = strings.ReplaceAll(r.Text, tmpl, c.workdir)
	quoted, _ := json.Marshal(c.workdir) // a string always marshals
	escaped := string(quoted[1 : len(quoted)-1])
	calls := make([]ToolCall, len(r.ToolCalls))
	for i, tc := range r.ToolCalls {
		if tc.Custom {
			tc.Arguments = strings.ReplaceAll(tc.Arguments, tmpl, c.workdir)
		} else {
			tc.Arguments = strings.ReplaceAll(tc.Arguments, tmpl, escaped)
		}
		calls[i] = tc
	}
	r.ToolCalls = calls
	return r
}
