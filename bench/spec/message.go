package spec

import (
	"strings"

	"github.com/rcm-dev/rcm/internal/chat"
)

// rewrite returns m with every path-bounded occurrence of from replaced by to
// in its content and tool-call arguments. It copies; m is not changed.
func rewrite(m chat.Message, from, to string) chat.Message {
	if from == "" {
		return m
	}
	m.Content = rewritePath(m.Content, from, to)
	if len(m.ToolCalls) > 0 {
		calls := make([]chat.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			c.Function.Arguments = rewritePath(c.Function.Arguments, from, to)
			calls[i] = c
		}
		m.ToolCalls = calls
	}
	return m
}

// rewritePath replaces from by to where from stands as a whole path prefix:
// the byte before it does not continue a path segment and the byte after it
// ends the segment. So "/testbed" becomes "/work/ws1" in "cd /testbed/django"
// but not in "/opt/miniconda3/envs/testbed/bin/python".
func rewritePath(s, from, to string) string {
	if !strings.Contains(s, from) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0 // s[:last] is written
	for off := 0; ; {
		i := strings.Index(s[off:], from)
		if i < 0 {
			break
		}
		i += off
		end := i + len(from)
		okBefore := i == 0 || !pathByte(s[i-1])
		okAfter := end == len(s) || s[end] == '/' || !pathByte(s[end])
		if okBefore && okAfter {
			b.WriteString(s[last:i])
			b.WriteString(to)
			last = end
		}
		off = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// pathByte reports whether c can continue a path segment.
func pathByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return c == '_' || c == '-' || c == '.' || c == '/'
}
