package proc

import (
	"strings"

	"github.com/rcm-dev/rcm/internal/str"
)

// headBytes is how much of a client's output an error message quotes:
// clients say what went wrong first, then where their log is.
const headBytes = 600

// Head returns the start of a client's output for an error message.
func Head(out string) string {
	out = strings.TrimSpace(out)
	if len(out) > headBytes {
		out = str.Clip(out, headBytes) + "..."
	}
	return out
}
