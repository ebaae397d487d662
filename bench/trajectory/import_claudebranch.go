package trajectory

import (
	"encoding/json"
	"strings"
)

// claudeLine is one line of a Claude Code session log, as far as the
// reader needs it.
type claudeLine struct {
	n         int           // line number, from 1
	Type      string        `json:"type"`
	Cwd       string        `json:"cwd"`
	Sidechain bool          `json:"isSidechain"`
	Compact   bool          `json:"isCompactSummary"`
	Message   claudeMessage `json:"message"`
	UUID      string        `json:"uuid"`
	Parent    string        `json:"parentUuid"`
	// A compaction's boundary has no parent, only a logical one: the
	// conversation it continues.
	Logical string `json:"logicalParentUuid"`
	Leaf    string `json:"leafUuid"` // a last-prompt line's: the conversation's current end
}

// prompt tells whether the line is a request the person typed (text, not
// only tool results).
func (l *claudeLine) prompt() bool {
	if l.Type != "user" || l.Sidechain || len(l.Message.Content) == 0 {
		return false
	}
	if l.Message.Content[0] == '"' {
		return true
	}
	var blocks []claudeBlock
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		return false
	}
	for _, b := range blocks {
		if b.Type == "text" {
			return true
		}
	}
	return false
}

func (l *claudeLine) parent() string {
	if l.Parent == "" {
		return l.Logical
	}
	return l.Parent
}

// rewound returns the lines a rewind left behind, by index: each request
// the person rewound past (Esc Esc, /rewind, --resume-session-at) and
// everything that followed it on its branch. Claude Code keeps such a
// branch in the file and forks the conversation at an earlier entry; it
// sends the model only the chain of parentUuid links from the
// conversation's end (the last last-prompt line's leafUuid, else the last
// message) back to its start. Only whole branches that start at a prompt
// are left out: an entry off that chain for another reason (the first of
// parallel tool calls' results hangs off its own tool_use, not the last
// one) stays. A chain that breaks (a parent the file lacks, a cycle) leaves
// out nothing.
func rewound(lines []claudeLine) map[int]bool {
	at := make(map[string]int, len(lines))
	leaf := ""
	for i, l := range lines {
		if l.UUID != "" && !l.Sidechain {
			at[l.UUID] = i
			if l.Type == "user" || l.Type == "assistant" {
				leaf = l.UUID
			}
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].Type == "last-prompt" {
			if _, ok := at[lines[i].Leaf]; ok {
				leaf = lines[i].Leaf
			}
			break
		}
	}
	if leaf == "" {
		return nil
	}
	chain := map[int]bool{}
	root := -1
	for id := leaf; id != ""; {
		i, ok := at[id]
		if !ok || chain[i] {
			return nil // broken or cyclic: read the file as it stands
		}
		chain[i] = true
		root, id = i, lines[i].parent()
	}
	// A branch starts at a prompt off the chain whose parent is on it, or,
	// when the conversation itself starts at a prompt (a rewind to its
	// first request), at an earlier prompt with no parent.
	starts := map[int]bool{}
	first := lines[root].prompt() && !lines[root].Compact
	for i := range lines {
		l := &lines[i]
		if chain[i] || !l.prompt() {
			continue
		}
		p := l.parent()
		if j, ok := at[p]; ok && chain[j] || p == "" && first && i < root {
			starts[i] = true
		}
	}
	if len(starts) == 0 {
		return nil
	}
	// The branches' other entries: those whose ancestors reach a start.
	out, kept := map[int]bool{}, map[int]bool{}
	for i := range lines {
		var path []int
		left := false
		for j := i; !kept[j] && !chain[j] && len(path) <= len(lines); {
			if starts[j] || out[j] {
				left = true
				break
			}
			path = append(path, j)
			k, ok := at[lines[j].parent()]
			if !ok {
				break
			}
			j = k
		}
		for _, j := range path {
			out[j], kept[j] = left, !left
		}
	}
	for i := range starts {
		out[i] = true
	}
	return out
}

// requestText is the start of a prompt, to name it in a skip.
func requestText(m claudeMessage) string {
	var s string
	if json.Unmarshal(m.Content, &s) != nil {
		var blocks []claudeBlock
		_ = json.Unmarshal(m.Content, &blocks)
		var texts []string
		for _, b := range blocks {
			if b.Type == "text" {
				texts = append(texts, b.Text)
			}
		}
		s = strings.Join(texts, "\n")
	}
	r := []rune(strings.TrimSpace(s))
	return string(r[:min(len(r), 60)])
}
