package replay

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"strings"
	"unicode/utf16"

	"github.com/rcm-dev/rcm/internal/chat"
)

// OpenCode 1.18.33's compaction call, from a real capture
// (testdata/opencode/compaction_manual_request.body.json): its system prompt
// and the text after the </conversation> tag of its prompt (the
// instruction and the summary template).
var (
	//go:embed opencode_compaction_system.txt
	compactionSystem string
	//go:embed opencode_compaction_prompt.txt
	compactionPrompt string
)

// DefaultCompactionTail is the recent tail, in tokens, that OpenCode 1.18.33
// keeps verbatim and leaves out of its compaction call:
// min(15000, max(2000, usable/4)), 15000 for any model with 60k usable
// tokens or more (128k context, 8k output in the captures' config).
const DefaultCompactionTail = 15000

// toolOutputMax is where OpenCode cuts a tool result in the compaction
// prompt (in UTF-16 code units, as JavaScript counts).
const toolOutputMax = 2000

// CompactionBody returns the compaction (summarize) call OpenCode 1.18.33
// sends for a session whose history is msgs (system prompt first, as the
// harness sends agent calls), byte for byte in the capture's shape: its
// summarization system prompt, then one user message holding the older part
// of the conversation, rendered as text inside <conversation>, and the
// summary template; no tools.
//
// The recent tail that OpenCode keeps verbatim after compaction is not in
// the prompt: the newest whole turns (a turn starts at a user message) while
// their size (message JSON bytes/4) fits tail tokens; when the next turn
// does not fit whole, its newest messages that fit (from an assistant
// message on). When everything fits, or tail < 0, the whole conversation is
// in the prompt.
func CompactionBody(model string, msgs []chat.Message, tail int) []byte {
	units := compactionUnits(msgs)
	head := units[:compactionHead(units, tail)]
	parts := make([]string, 0, len(head))
	for _, u := range head {
		if s := u.text(msgs); s != "" {
			parts = append(parts, s)
		}
	}
	prompt := "Here is the conversation so far:\n\n<conversation>\n" + strings.Join(parts, "\n\n") +
		"\n</conversation>\n\n" + compactionPrompt
	var b bytes.Buffer
	b.WriteString(`{"model":`)
	b.Write(jsQuote(model))
	b.WriteString(`,"max_tokens":8192,"messages":[{"role":"system","content":`)
	b.Write(jsQuote(compactionSystem))
	b.WriteString(`},{"role":"user","content":`)
	b.Write(jsQuote(prompt))
	b.WriteString(`}],"stream":true,"stream_options":{"include_usage":true}}`)
	return b.Bytes()
}

// jsQuote encodes s as a JSON string as JSON.stringify does (no HTML
// escaping).
func jsQuote(s string) []byte {
	b, _ := marshal(s) // a string always encodes
	return b
}

// ocMessage is one message as OpenCode keeps it: a user message, or an assistant
// message with the results of its tool calls (msgs[start:end]).
type ocMessage struct {
	start, end int
	user       bool
	bytes      int // JSON size of its chat messages
}

// compactionUnits groups the chat messages after the system prompt into
// OpenCode's messages.
func compactionUnits(msgs []chat.Message) []ocMessage {
	var out []ocMessage
	for i, m := range msgs {
		size := 0
		if b, err := marshal(m); err == nil {
			size = len(b)
		}
		switch {
		case m.Role == chat.RoleSystem:
			continue
		case m.Role == chat.RoleTool && len(out) > 0 && msgs[out[len(out)-1].start].Role == chat.RoleAssistant:
			out[len(out)-1].end = i + 1
			out[len(out)-1].bytes += size
			continue
		}
		out = append(out, ocMessage{start: i, end: i + 1, user: m.Role == chat.RoleUser, bytes: size})
	}
	return out
}

// compactionHead returns how many units go into the compaction prompt: all
// but the recent tail that fits tail tokens (OpenCode 1.18.33's select).
func compactionHead(units []ocMessage, tail int) int {
	if tail < 0 {
		return len(units)
	}
	tokens := func(us []ocMessage) int {
		n := 0
		for _, u := range us {
			n += u.bytes
		}
		return tokensOf(n)
	}
	// Turns start at user messages.
	var starts []int
	for i, u := range units {
		if i == 0 || u.user {
			starts = append(starts, i)
		}
	}
	keep, total := -1, 0
	for t := len(starts) - 1; t >= 0; t-- {
		start, end := starts[t], len(units)
		if t+1 < len(starts) {
			end = starts[t+1]
		}
		size := tokens(units[start:end])
		if total+size <= tail {
			total += size
			keep = start
			continue
		}
		// Split the turn: its newest messages that fit, after its request.
		if room := tail - total; room > 0 {
			for s := start + 1; s < end; s++ {
				if tokens(units[s:end]) <= room {
					keep = s
					break
				}
			}
		}
		break
	}
	if keep <= 0 {
		return len(units)
	}
	return keep
}

// text renders an ocMessage as OpenCode's compaction prompt does: "[User]: ...";
// "[Assistant]: ..." and per tool call "[Assistant tool call]: name(args)"
// with "[Tool result]: ..." (cut at 2000 characters), one per line.
func (u ocMessage) text(msgs []chat.Message) string {
	m := msgs[u.start]
	switch m.Role {
	case chat.RoleUser:
		if m.Content == "" {
			return ""
		}
		return "[User]: " + m.Content
	case chat.RoleAssistant:
	default:
		return ""
	}
	var lines []string
	if m.Content != "" {
		lines = append(lines, "[Assistant]: "+m.Content)
	}
	for _, c := range m.ToolCalls {
		lines = append(lines, "[Assistant tool call]: "+c.Function.Name+"("+compactJSON(c.Function.Arguments)+")")
		for _, r := range msgs[u.start+1 : u.end] {
			if r.ToolCallID == c.ID {
				lines = append(lines, "[Tool result]: "+truncateJS(r.Content, toolOutputMax))
				break
			}
		}
	}
	return strings.Join(lines, "\n")
}

// compactJSON writes arguments as JSON.stringify writes the parsed input:
// without insignificant space; text that is no JSON stays as it is.
func compactJSON(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}

// truncateJS cuts s after max UTF-16 code units and marks the cut, as
// OpenCode's truncate does.
func truncateJS(s string, max int) string {
	n := 0
	for i, r := range s {
		w := utf16.RuneLen(r)
		if w < 0 {
			w = 1
		}
		if n+w > max {
			return s[:i] + "\n[truncated]"
		}
		n += w
	}
	return s
}

// compactionCoverage returns the share of tasks (the session's unfinished
// ones) whose every request is found verbatim in the text of some message of
// the forwarded compaction call; NaN when there are no tasks.
func compactionCoverage(fwd []Forwarded, requests map[string][]string, tasks []string) float64 {
	if len(tasks) == 0 {
		return nan()
	}
	covered := 0
	for _, t := range tasks {
		if recallOf(requests[t], fwd) == 1 {
			covered++
		}
	}
	return float64(covered) / float64(len(tasks))
}

// compactionSections reports whether the forwarded compaction call asks for
// one section per task: it names a "## Task <id>" heading for at least two
// ids that the call as sent did not name.
func compactionSections(sent, fwd string) bool {
	before := taskHeadings(sent)
	n := 0
	for id := range taskHeadings(fwd) {
		if !before[id] {
			n++
		}
	}
	return n >= 2
}

// taskHeadings returns the ids of the "## Task <id>" headings text names
// (the id runs to a space, comma, parenthesis, backtick or line end).
func taskHeadings(text string) map[string]bool {
	ids := map[string]bool{}
	const mark = "## Task "
	for rest := text; ; {
		i := strings.Index(rest, mark)
		if i < 0 {
			return ids
		}
		rest = rest[i+len(mark):]
		end := strings.IndexAny(rest, " ,()`\n\t")
		if end < 0 {
			end = len(rest)
		}
		if id := rest[:end]; id != "" && id != "<id>" {
			ids[id] = true
		}
	}
}

// compactionSummary is the scripted model's answer to the compaction call:
// one "## Task <id>" section per task, each with its requests verbatim
// (ids: the proxy's task id for the task when it has one, else the
// task's own), so that rcm can attribute it.
func compactionSummary(tasks []string, ids map[string]string, requests map[string][]string, unfinished map[string]bool) string {
	var b strings.Builder
	for _, t := range tasks {
		id := ids[t]
		if id == "" {
			id = t
		}
		b.WriteString("## Task " + id + "\n### Requirements\n")
		for _, r := range requests[t] {
			b.WriteString("- " + strings.ReplaceAll(r, "\n", "\n  ") + "\n")
		}
		b.WriteString("### Unfinished\n")
		if unfinished[t] {
			b.WriteString("- complete and submit the fix\n")
		} else {
			b.WriteString("- (none)\n")
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
