package compaction

import (
	"fmt"

	"github.com/rcm-dev/rcm/internal/str"
	"github.com/tidwall/sjson"
)

// withContent returns a copy of the message object raw whose "content" is
// the string text; every other field keeps its bytes.
func withContent(raw []byte, text string) ([]byte, error) { return withText(raw, "content", text) }

// withText returns a copy of the object raw whose member field is the
// string text; every other field keeps its bytes.
func withText(raw []byte, field, text string) ([]byte, error) {
	// Without ReplaceInPlace sjson writes a new buffer: raw, which aliases
	// the request body, stays untouched.
	out, err := sjson.SetRawBytes(raw, field, str.Quote(text))
	if err != nil {
		return nil, fmt.Errorf("compaction: set %s: %w", field, err)
	}
	return out, nil
}
