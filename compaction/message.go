package compaction

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tidwall/sjson"
)

// quote encodes s as a JSON string. Unlike json.Marshal it leaves <, > and &
// alone: prompts are full of tags, and harnesses serialise them unescaped.
func quote(s string) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(s) + 2)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// withContent returns a copy of the message object raw whose "content" is
// the string text; every other field keeps its bytes.
func withContent(raw []byte, text string) ([]byte, error) { return withText(raw, "content", text) }

// withText returns a copy of the object raw whose member field is the
// string text; every other field keeps its bytes.
func withText(raw []byte, field, text string) ([]byte, error) {
	q, err := quote(text)
	if err != nil {
		return nil, fmt.Errorf("compaction: encode %s: %w", field, err)
	}
	// Without ReplaceInPlace sjson writes a new buffer: raw, which aliases
	// the request body, stays untouched.
	out, err := sjson.SetRawBytes(raw, field, q)
	if err != nil {
		return nil, fmt.Errorf("compaction: set %s: %w", field, err)
	}
	return out, nil
}
