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

// call is what the rules see of one chat request, and the request options
// the answer follows.
type call struct {
	kind    string
	user    string // last user message
	tool    string // last tool result after the last user message
	system  string
	last    string // role of the final message
	session string
	workdir string

	model                string
	stream, includeUsage bool
}

// readCall summarises a chat body in one pass over its top level and one
// over its messages, decoding only what a rule can look at: the system
// prompts, the last user message and the last tool result after it. Those
// few messages are read by the transcript package, as the proxy reads them
// (texts, and the call's kind from the leading system prompts), without
// parsing a long history. A body the transcript package cannot read (no
// messages array, say) is still answered: as an agent call with no text.
func readCall(body []byte, h http.Header) call {
	c := call{kind: transcript.Agent.String(), session: h.Get(headerSession)}
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
		default:
			others = true
		}
		switch role {
		case "user":
			user, tool = v.Raw, ""
		case "tool":
			tool = v.Raw
		}
		last = role
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
	c.kind, c.last = t.Kind.String(), last
	var system []string
	for i := range t.Messages[:at] {
		if m := &t.Messages[i]; m.Role == "system" || m.Role == "developer" {
			system = append(system, m.Text())
		}
	}
	if user != "" {
		c.user = t.Messages[at].Text()
		at++
	}
	if tool != "" {
		c.tool = t.Messages[at].Text()
	}
	c.system = strings.Join(system, "\n")
	c.workdir = workdir(c.system)
	return c
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
