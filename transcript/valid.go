package transcript

// valid reports whether s is one JSON value, with whitespace around it.
// It accepts exactly what gjson.Valid accepts (FuzzValid checks it), so that
// Parse's verdicts do not depend on which of the two ran, but it moves
// through string contents, most of a history's bytes, eight bytes at a
// time: it is the one validating pass over a body.
func valid(s string) bool {
	i, ok := validValue(s, skipWS(s, 0))
	return ok && skipWS(s, i) == len(s)
}

func skipWS(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// validValue returns the index past the value at s[i] and whether it is
// valid. Nesting recurses, as gjson's does.
func validValue(s string, i int) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch c := s[i]; {
	case c == '{':
		return validObject(s, i+1)
	case c == '[':
		return validArray(s, i+1)
	case c == '"':
		return validString(s, i+1)
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(s, i)
	case c == 't':
		return literal(s, i, "true")
	case c == 'f':
		return literal(s, i, "false")
	case c == 'n':
		return literal(s, i, "null")
	}
	return i, false
}

func literal(s string, i int, lit string) (int, bool) {
	if len(s)-i >= len(lit) && s[i:i+len(lit)] == lit {
		return i + len(lit), true
	}
	return i, false
}

// validObject checks the members after an object's '{' at s[i-1].
func validObject(s string, i int) (int, bool) {
	i = skipWS(s, i)
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	i, ok := validPair(s, i)
	if !ok {
		return i, false
	}
	return validObjectRest(s, i)
}

// validPair checks one member, key and value, at s[i].
func validPair(s string, i int) (int, bool) {
	if i >= len(s) || s[i] != '"' {
		return i, false
	}
	var ok bool
	if i, ok = validString(s, i+1); !ok {
		return i, false
	}
	if i = skipWS(s, i); i >= len(s) || s[i] != ':' {
		return i, false
	}
	return validValue(s, skipWS(s, i+1))
}

// validObjectRest checks what follows a member's value at s[i-1]: more
// members, then the object's '}'.
func validObjectRest(s string, i int) (int, bool) {
	for {
		switch i = skipWS(s, i); {
		case i >= len(s):
			return i, false
		case s[i] == '}':
			return i + 1, true
		case s[i] != ',':
			return i, false
		}
		var ok bool
		if i, ok = validPair(s, skipWS(s, i+1)); !ok {
			return i, false
		}
	}
}

// validArray checks the elements after an array's '[' at s[i-1].
func validArray(s string, i int) (int, bool) {
	i = skipWS(s, i)
	if i < len(s) && s[i] == ']' {
		return i + 1, true
	}
	i, ok := validValue(s, i)
	if !ok {
		return i, false
	}
	return validArrayRest(s, i)
}

// validArrayRest checks what follows an element at s[i-1]: more elements,
// then the array's ']'.
func validArrayRest(s string, i int) (int, bool) {
	for {
		switch i = skipWS(s, i); {
		case i >= len(s):
			return i, false
		case s[i] == ']':
			return i + 1, true
		case s[i] != ',':
			return i, false
		}
		var ok bool
		if i, ok = validValue(s, skipWS(s, i+1)); !ok {
			return i, false
		}
	}
}

// validAfter reports whether s is valid JSON given that s[:i] is a prefix
// of a valid body that ends just after an element of an array that is the
// value of a member of the top-level object (a messages array): it checks
// only the rest, from i on.
func validAfter(s string, i int) bool {
	i, ok := validArrayRest(s, i)
	if !ok {
		return false
	}
	if i, ok = validObjectRest(s, i); !ok {
		return false
	}
	return skipWS(s, i) == len(s)
}

// SWAR constants: a byte of ones and a byte of high bits in every lane.
const (
	lanes1 = 0x0101010101010101
	lanes8 = 0x8080808080808080
)

// special reports whether any byte of w is a quote, a backslash or a
// control character (below 0x20): the only bytes a string's scan must
// stop at. Each test is exact for "any lane" (the borrow that can mark a
// lane wrongly only follows a lane that is rightly marked).
func special(w uint64) bool {
	zero := func(v uint64) uint64 { return (v - lanes1) & ^v & lanes8 }
	return (w-lanes1*0x20)&^w&lanes8|zero(w^(lanes1*'"'))|zero(w^(lanes1*'\\')) != 0
}

// load64 reads s[i:i+8] as a little-endian word (one load, once compiled).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// validString checks the rest of a string whose opening quote is s[i-1]
// and returns the index past its closing quote.
func validString(s string, i int) (int, bool) {
	for i < len(s) {
		// Runs of plain bytes, eight at a time.
		for i+8 <= len(s) && !special(load64(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		switch c := s[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(s) {
				return i, false
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for range 4 {
					if i++; i >= len(s) || !isHex(s[i]) {
						return i, false
					}
				}
			default:
				return i, false
			}
		}
		i++
	}
	return i, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// validNumber checks the number at s[i]: an optional minus, then 0 or
// digits, an optional fraction and an optional exponent.
func validNumber(s string, i int) (int, bool) {
	if s[i] == '-' {
		if i++; i >= len(s) || !isDigit(s[i]) {
			return i, false
		}
	}
	if s[i] == '0' {
		i++
	} else {
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && s[i] == '.' {
		if i++; i >= len(s) || !isDigit(s[i]) {
			return i, false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		if i++; i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return i, false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	return i, true
}
