package redact

import (
	"strings"
	"unsafe"
)

// Kinds of secret, as they appear in the marker.
const (
	OpenAI        = "openai-key"
	Anthropic     = "anthropic-key"
	GitHub        = "github-token"
	GitLab        = "gitlab-token"
	Slack         = "slack-token"
	NPM           = "npm-token"
	AWSAccessKey  = "aws-access-key"
	JWT           = "jwt"
	Authorization = "authorization"
	Bearer        = "bearer"
	Password      = "password"
	Secret        = "secret"
	URLPassword   = "url-password"
	PrivateKey    = "private-key"
)

// maxPasses bounds the passes String makes to reach a fixed point; one
// pass nearly always suffices, a second only when a redaction exposes a
// boundary (see String).
const maxPasses = 4

// String returns s with every secret it finds replaced by
// "[redacted:KIND]"; s itself when there is none.
func String(s string) string {
	for range maxPasses {
		out, changed := pass(s)
		if !changed {
			return s
		}
		s = out
	}
	return s
}

// Bytes is String for a byte slice. It returns b itself (no copy) when
// there is nothing to redact, else a new slice.
func Bytes(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	// Read-only view: pass never retains s, and b is not modified.
	s := unsafe.String(unsafe.SliceData(b), len(b))
	out := String(s)
	if len(out) == len(s) && unsafe.StringData(out) == unsafe.StringData(s) {
		return b
	}
	return []byte(out)
}

// Found is one secret: s[Start:End] is replaced, Kind names it.
type Found struct {
	Start, End int
	Kind       string
}

// Find returns the secrets of one pass over s, in order and disjoint.
func Find(s string) []Found {
	var out []Found
	scan(s, func(f Found) { out = append(out, f) })
	return out
}

func pass(s string) (string, bool) {
	var b strings.Builder
	last := 0
	scan(s, func(f Found) {
		if last == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:f.Start])
		b.WriteString("[redacted:")
		b.WriteString(f.Kind)
		b.WriteByte(']')
		last = f.End
	})
	if last == 0 {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// starts marks the byte pairs at which some rule may start (keywords in
// any case), so that nearly every position costs one table lookup.
var starts = func() *[256][256]bool {
	var t [256][256]bool
	for _, p := range []string{"sk", "gh", "gi", "gl", "xo", "np", "ey", "AK", "AS", "--", ":/"} {
		t[p[0]][p[1]] = true
	}
	for _, p := range []string{"au", "ap", "ac", "be", "pa", "se", "re"} {
		for _, a := range []byte{p[0], p[0] - 32} {
			for _, b := range []byte{p[1], p[1] - 32} {
				t[a][b] = true
			}
		}
	}
	return &t
}()

// scan calls fn for each secret of s, left to right.
func scan(s string, fn func(Found)) {
	for i := 0; i+1 < len(s); i++ {
		if !starts[s[i]][s[i+1]] {
			continue
		}
		f, ok := match(s, i)
		if !ok {
			continue
		}
		fn(f)
		i = f.End - 1
	}
}

// match tries the rules that may start at s[i].
func match(s string, i int) (Found, bool) {
	rest := s[i:]
	switch c := s[i]; c {
	case 's':
		if strings.HasPrefix(rest, "sk-") && boundary(s, i) {
			if strings.HasPrefix(rest, "sk-ant-") {
				return token(s, i, 7, Anthropic, dashed, 20, false)
			}
			return token(s, i, 3, OpenAI, dashed, 20, true)
		}
	case 'g':
		if len(rest) > 4 && rest[0:2] == "gh" && strings.IndexByte("pousr", rest[2]) >= 0 && rest[3] == '_' && boundary(s, i) {
			return token(s, i, 4, GitHub, alnum, 20, false)
		}
		if strings.HasPrefix(rest, "github_pat_") && boundary(s, i) {
			return token(s, i, 11, GitHub, word, 20, false)
		}
		if strings.HasPrefix(rest, "glpat-") && boundary(s, i) {
			return token(s, i, 6, GitLab, dashed, 20, false)
		}
	case 'x':
		if len(rest) > 5 && rest[0:3] == "xox" && strings.IndexByte("abprs", rest[3]) >= 0 && rest[4] == '-' && boundary(s, i) {
			return token(s, i, 5, Slack, dashed, 10, false)
		}
	case 'n':
		if strings.HasPrefix(rest, "npm_") && boundary(s, i) {
			return token(s, i, 4, NPM, alnum, 30, false)
		}
	case 'e':
		if strings.HasPrefix(rest, "eyJ") && boundary(s, i) {
			return jwt(s, i)
		}
	case 'A':
		if (strings.HasPrefix(rest, "AKIA") || strings.HasPrefix(rest, "ASIA")) && boundary(s, i) {
			if f, ok := awsKeyID(s, i); ok {
				return f, true
			}
		}
	case '-':
		if strings.HasPrefix(rest, "-----BEGIN ") {
			return pem(s, i)
		}
	case ':':
		if strings.HasPrefix(rest, "://") {
			return userinfo(s, i+3)
		}
	}
	return keyword(s, i)
}

// Character classes of token bodies.
var (
	alnum  = class("")
	word   = class("_")
	dashed = class("_-")
	b64url = dashed
	// credential is what an Authorization value or a bearer token holds.
	credential = class("-._~+/=")
	// valueEnd ends the value of password=...: whitespace, quotes, a
	// backslash (a JSON escape), separators and brackets, so that a marker
	// is never part of a value.
	valueEnd = func() (t [256]bool) {
		for _, c := range []byte(" \t\r\n\v\f\"'`\\,;&<>(){}[]") {
			t[c] = true
		}
		return t
	}()
)

func class(extra string) *[256]bool {
	var t [256]bool
	for c := 0; c < 256; c++ {
		t[c] = isAlnum(byte(c))
	}
	for _, c := range []byte(extra) {
		t[c] = true
	}
	return &t
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// boundary reports whether a token may start at s[i]: at the start, after
// a byte that is not part of a word, or after a JSON escape (\n, \t,
// \u003e), which stands for a separator in the text it encodes.
func boundary(s string, i int) bool {
	if i == 0 {
		return true
	}
	if c := s[i-1]; !isAlnum(c) && c != '_' {
		return true
	}
	if i >= 2 && s[i-2] == '\\' {
		return true
	}
	return i >= 6 && s[i-6] == '\\' && s[i-5] == 'u' && isHex(s[i-4]) && isHex(s[i-3]) && isHex(s[i-2]) && isHex(s[i-1])
}

// span returns the end of the run of chars of cls starting at j.
func span(s string, j int, cls *[256]bool) int {
	for j < len(s) && cls[s[j]] {
		j++
	}
	return j
}

// token matches a prefix of n bytes followed by at least min bytes of cls
// (with a digit among them when digit is set).
func token(s string, i, n int, kind string, cls *[256]bool, min int, digit bool) (Found, bool) {
	end := span(s, i+n, cls)
	if end-i-n < min {
		return Found{}, false
	}
	if digit && strings.IndexAny(s[i+n:end], "0123456789") < 0 {
		return Found{}, false
	}
	return Found{i, end, kind}, true
}

// awsKeyID matches an AWS access key id: AKIA or ASIA and 16 upper-case
// letters or digits, a whole word.
func awsKeyID(s string, i int) (Found, bool) {
	end := i + 20
	if end > len(s) || end < len(s) && isAlnum(s[end]) {
		return Found{}, false
	}
	for j := i + 4; j < end; j++ {
		if c := s[j]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return Found{}, false
		}
	}
	return Found{i, end, AWSAccessKey}, true
}

// jwt matches header.payload[.signature], both JSON objects in base64url
// (so each begins eyJ).
func jwt(s string, i int) (Found, bool) {
	h := span(s, i+3, b64url)
	if h-i < 10 || h+4 > len(s) || s[h] != '.' || s[h+1:h+4] != "eyJ" {
		return Found{}, false
	}
	end := span(s, h+4, b64url)
	if end-h < 10 {
		return Found{}, false
	}
	if end < len(s) && s[end] == '.' {
		end = span(s, end+1, b64url)
	}
	return Found{i, end, JWT}, true
}

// pem matches a private-key block from its BEGIN line to its END line;
// a block cut short is redacted as far as its base64 body goes. Escaped
// line breaks (\n, \r in JSON) count as line breaks.
func pem(s string, i int) (Found, bool) {
	j := i + len("-----BEGIN ")
	label := j
	for j < len(s) && (s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9' || s[j] == ' ') {
		j++
	}
	if !strings.HasPrefix(s[j:], "-----") || !strings.Contains(s[label:j], "PRIVATE KEY") {
		return Found{}, false
	}
	j += 5
	for j < len(s) {
		c := s[j]
		switch {
		case strings.HasPrefix(s[j:], "-----END "):
			k := j + len("-----END ")
			for k < len(s) && (s[k] >= 'A' && s[k] <= 'Z' || s[k] >= '0' && s[k] <= '9' || s[k] == ' ') {
				k++
			}
			if strings.HasPrefix(s[k:], "-----") {
				k += 5
			}
			return Found{i, k, PrivateKey}, true
		case c == '\\' && j+1 < len(s) && (s[j+1] == 'n' || s[j+1] == 'r'):
			j += 2
		case isAlnum(c) || strings.IndexByte("+/= \t\r\n:,-", c) >= 0:
			// base64 lines and the Proc-Type/DEK-Info headers of
			// encrypted keys
			j++
		default:
			return Found{i, j, PrivateKey}, true
		}
	}
	return Found{i, j, PrivateKey}, true
}

// userinfo matches the password of scheme://user:password@host; at is
// where the authority starts.
func userinfo(s string, at int) (Found, bool) {
	colon := -1
	for j := at; j < len(s); j++ {
		switch c := s[j]; c {
		case '@':
			if colon < 0 || colon+1 == j {
				return Found{}, false
			}
			return Found{colon + 1, j, URLPassword}, true
		case ':':
			if colon < 0 {
				colon = j
			}
		case '/', '?', '#', ' ', '\t', '\r', '\n', '"', '\'', '\\', '<', '>', '[', ']', '`':
			return Found{}, false
		}
	}
	return Found{}, false
}

// keywords introduce a secret value (after = or :), matched
// case-insensitively anywhere (so DB_PASSWORD and client_secret count).
var keywords = []struct{ word, kind string }{
	{"authorization", Authorization},
	{"bearer", Bearer},
	{"password", Password},
	{"passwd", Password},
	{"secret", Secret},
	{"api_key", Secret},
	{"api-key", Secret},
	{"apikey", Secret},
	{"access_token", Secret},
	{"auth_token", Secret},
	{"refresh_token", Secret},
}

// keyword tries the context rules at s[i].
func keyword(s string, i int) (Found, bool) {
	first := s[i] | 0x20
	for _, k := range keywords {
		if k.word[0] != first || !hasPrefixFold(s[i:], k.word) {
			continue
		}
		j := i + len(k.word)
		switch k.kind {
		case Authorization:
			return authorization(s, j)
		case Bearer:
			if !boundary(s, i) {
				return Found{}, false
			}
			return bearer(s, j)
		}
		return assigned(s, span(s, j, dashed), k.kind)
	}
	return Found{}, false
}

func hasPrefixFold(s, lower string) bool {
	if len(s) < len(lower) {
		return false
	}
	for i := 0; i < len(lower); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c |= 0x20
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// separator skips what stands between a key and its value: blanks, the
// quotes closing the key (also JSON-escaped, \"), one = or : (or :=), then
// blanks and an opening quote. ok is false when there is no = or :.
func separator(s string, j int) (int, bool) {
	j = skipQuotes(s, j)
	if j >= len(s) || s[j] != '=' && s[j] != ':' {
		return j, false
	}
	j++
	if j < len(s) && s[j] == '=' {
		j++
	}
	return skipQuotes(s, j), true
}

func skipQuotes(s string, j int) int {
	for j < len(s) {
		switch c := s[j]; {
		case c == ' ' || c == '\t' || c == '"' || c == '\'':
			j++
		case c == '\\' && j+1 < len(s) && (s[j+1] == '"' || s[j+1] == '\''):
			j += 2
		default:
			return j
		}
	}
	return j
}

// assigned matches the value of key=value or key: value; j is where the
// key ends.
func assigned(s string, j int, kind string) (Found, bool) {
	sep := skipQuotes(s, j)
	j, ok := separator(s, j)
	if !ok || j >= len(s) || s[j] == '$' {
		return Found{}, false
	}
	end := j
	if q := s[j-1]; q == '"' || q == '\'' {
		// A quoted value runs to its closing quote (or the line's end, or
		// a backslash: an escape in JSON-encoded text).
		if strings.HasPrefix(s[j:], "[redacted:") {
			return Found{}, false
		}
		for end < len(s) && s[end] != q && s[end] != '"' && s[end] != '\\' && s[end] != '\n' {
			end++
		}
	} else {
		for end < len(s) && !valueEnd[s[end]] {
			end++
		}
		// After a colon ("the password: users get a mail") an unquoted
		// value must look like a secret; after = it is one.
		if end > j && s[sep] == ':' && !looksSecret(s[j:end], 6) {
			return Found{}, false
		}
	}
	if end == j {
		return Found{}, false
	}
	return Found{j, end, kind}, true
}

// looksSecret reports whether a word is shaped like a credential rather
// than prose: at least min bytes with a digit, a symbol, or both cases.
func looksSecret(v string, min int) bool {
	if len(v) < min {
		return false
	}
	var digit, symbol, upper, lower bool
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		default:
			symbol = true
		}
	}
	return digit || symbol || upper && lower
}

// authorization matches the credential of an Authorization header: the
// word after the scheme (Bearer, Basic, token, ...) or, with no scheme,
// the value itself.
func authorization(s string, j int) (Found, bool) {
	j, ok := separator(s, j)
	if !ok {
		return Found{}, false
	}
	end := span(s, j, credential)
	if end == j || s[j] == '$' {
		return Found{}, false
	}
	kind := Authorization
	if end < len(s) && s[end] == ' ' && isLetters(s[j:end]) {
		scheme := s[j:end]
		k := end
		for k < len(s) && s[k] == ' ' {
			k++
		}
		e := span(s, k, credential)
		if e == k || s[k] == '$' {
			return Found{}, false
		}
		switch {
		case strings.EqualFold(scheme, "bearer"):
			kind = Bearer
		case strings.EqualFold(scheme, "basic"):
			kind = "basic"
		}
		j, end = k, e
	}
	// Prose ("add authorization: admins can delete posts") is not a
	// credential.
	if !looksSecret(s[j:end], 8) {
		return Found{}, false
	}
	return Found{j, end, kind}, true
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// bearer matches a long credential after a bare "Bearer " (shaped like
// one, so that prose such as "bearer authentication" is left alone).
func bearer(s string, j int) (Found, bool) {
	k := j
	for k < len(s) && s[k] == ' ' {
		k++
	}
	if k == j {
		return Found{}, false
	}
	end := span(s, k, credential)
	if end-k < 16 || !looksSecret(s[k:end], 16) {
		return Found{}, false
	}
	return Found{k, end, Bearer}, true
}
