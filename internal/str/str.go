package str

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"unicode/utf8"
)

// Clip cuts s to at most n bytes (n >= 0) on a character boundary: a
// character the cut would split is left out whole.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Quote encodes s as a JSON string with encoding/json's escaping, except
// that <, > and & stay as they are: prompts are full of tags, and harnesses
// serialise them unescaped. Invalid UTF-8 becomes U+FFFD.
func Quote(s string) []byte {
	var b bytes.Buffer
	b.Grow(len(s) + 2)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes, and a bytes.Buffer never fails
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

// CommonPrefix returns the length of the longest common prefix of a and b.
func CommonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	// Compare in blocks first, ever smaller: the common prefix is usually
	// most of it, and a byte loop over the last 4 KB cost as much as the
	// blocks before it.
	i := 0
	for _, block := range [...]int{4096, 256, 16} {
		for i+block <= n && string(a[i:i+block]) == string(b[i:i+block]) {
			i += block
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// WordByte reports whether c is an ASCII letter, digit or underscore: a
// byte of a word, as regexp's \b counts it.
func WordByte(c byte) bool {
	return c == '_' || (c|0x20) >= 'a' && (c|0x20) <= 'z' || c >= '0' && c <= '9'
}

// HTTPURL checks that s is an absolute http or https URL with a host, as
// every base URL rcm is given must be (its upstreams, its models' APIs).
func HTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an http(s) URL such as https://api.openai.com/v1")
	}
	return nil
}
