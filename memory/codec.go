package memory

import (
	"encoding/json"
	"fmt"

	"github.com/rcm-dev/rcm/redact"
	bolt "go.etcd.io/bbolt"
)

// getJSON decodes the value at key into v. It reports false when the key is
// absent (or the bucket is nil). Decoding copies, so v never aliases
// transaction memory.
func getJSON(b *bolt.Bucket, what string, key []byte, v any) (bool, error) {
	if b == nil {
		return false, nil
	}
	raw := b.Get(key)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("%s %q: corrupt value: %w", what, key, err)
	}
	return true, nil
}

// encodeJSON encodes v, secrets redacted: every JSON value of the store
// (sessions, tasks, records with their summaries, events) passes here, so
// none holds a token a user pasted into a request or a command. The
// redaction keeps the JSON valid (see package redact).
func encodeJSON(what string, key []byte, v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s %q: encode: %w", what, key, err)
	}
	return redact.Bytes(raw), nil
}

// readJSON decodes every value of b (nil: none).
func readJSON[T any](b *bolt.Bucket, what string) ([]T, error) {
	var out []T
	if b == nil {
		return nil, nil
	}
	err := b.ForEach(func(k, raw []byte) error {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("%s %q: corrupt value: %w", what, k, err)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}
