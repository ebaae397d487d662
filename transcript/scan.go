package transcript

import "strings"

// members calls fn with the raw key (quotes included), the raw value and
// the value's offset in obj of each member of the JSON object that opens
// obj, decoding neither: a message's content is often most of its bytes and
// most calls never read it. It returns the index just past the object (what
// follows it in obj is not read), or just past the member for which fn
// returned false (the rest is not read either). obj must be valid JSON or
// a valid prefix of it (Parse validates the body first).
func members(obj string, fn func(key, value string, off int) bool) int {
	i := strings.IndexByte(obj, '{')
	if i < 0 {
		return len(obj)
	}
	for i++; i < len(obj); {
		switch obj[i] {
		case '"':
			k := i
			i = skipString(obj, i)
			key := obj[k:i]
			for i < len(obj) && (obj[i] == ':' || isSpace(obj[i])) {
				i++
			}
			v := i
			i = skipValue(obj, i)
			if !fn(key, obj[v:i], v) {
				return i
			}
		case '}':
			return i + 1
		default:
			i++
		}
	}
	return len(obj)
}

// elements calls fn with the rest of the JSON array that opens arr (valid
// JSON, or a valid prefix of it) from each of its elements on, from index
// i on (just past the '[' or an element; 0: from the start), and the
// element's offset in arr; fn reads the element and returns its length. A
// reader that walks an element anyway (members does) spares a second scan
// of it. It returns the index just past the array.
func elements(arr string, i int, fn func(rest string, off int) int) int {
	if i == 0 {
		if i = strings.IndexByte(arr, '['); i < 0 {
			return len(arr)
		}
		i++
	}
	for i < len(arr) {
		switch c := arr[i]; {
		case c == ']':
			return i + 1
		case c == ',' || isSpace(c):
			i++
		default:
			i += max(fn(arr[i:], i), 1)
		}
	}
	return len(arr)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipString returns the index just past the string opening at s[i]. It
// jumps from quote to quote (memchr-fast) and counts the backslashes before
// each: an odd number escapes it.
func skipString(s string, i int) int {
	for i++; i < len(s); {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s)
		}
		i += j
		n := 0
		for k := i - 1; k >= 0 && s[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
	return len(s)
}

// skipValue returns the index just past the value starting at s[i].
func skipValue(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = skipString(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(s) && s[i] != ',' && s[i] != '}' && s[i] != ']' && !isSpace(s[i]) {
		i++
	}
	return i
}

// Span returns the offsets in body of the value of the top-level member
// named key (unquoted) of a JSON object, found without decoding or
// validating anything: a body that is not JSON gives a meaningless span or
// none, never a panic. The proxy measures what it forwarded with it, off
// the request path and in native mode too, where nothing has parsed the
// body.
func Span(body []byte, key string) (start, end int, ok bool) {
	members(alias(body), func(k, v string, off int) bool {
		if len(k) == len(key)+2 && k[1:len(k)-1] == key {
			start, end, ok = off, off+len(v), true
		}
		return !ok
	})
	return start, end, ok
}

// ArrayEnd returns the offset in body just past the JSON array that opens
// at body[start], scanning only from at on: body[start:at] must be the
// array's opening and whole elements (as when it is byte for byte the
// start of an array measured before, up to its closing bracket). ok is
// false when the array does not close; like Span it validates nothing and
// never panics.
func ArrayEnd(body []byte, start, at int) (end int, ok bool) {
	if start < 0 || at <= start || at > len(body) || body[start] != '[' {
		return 0, false
	}
	arr := alias(body[start:])
	n := elements(arr, at-start, func(rest string, _ int) int { return skipValue(rest, 0) })
	if n < 1 || arr[n-1] != ']' {
		return 0, false
	}
	return start + n, true
}
