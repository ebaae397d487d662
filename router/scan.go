package router

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rcm-dev/rcm/internal/str"
)

// Caps on how much text the router reads per message. A request's head
// carries its intent (an issue statement, a file name, a checkout); tool
// arguments name the paths they touch in their first bytes. Reading no more
// keeps routing cost flat in the size of the history.
const (
	queryCap    = 16384 // bytes of the request being classified
	requestCap  = 4096  // bytes of an earlier request
	argumentCap = 320   // bytes of one tool call's arguments
	answerCap   = 2048  // bytes of the last answer of an earlier turn
	callsCap    = 16    // tool calls read per turn: the first and the last halves
)

// term is a hashed lexical token. File paths are hashed with a different
// seed so that "query.py" the file and "query" the word stay apart, and word
// pairs with a third.
type term uint64

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
	fileSeed  = 0x9e3779b97f4a7c15
	pairSeed  = 0x7f4a7c159e3779b9
)

// Kinds of term: a word, a file path or name, a pair of adjacent words
// (a phrase: an issue's title names its task better than its words do).
const (
	kindWord = iota
	kindFile
	kindPair
	kindPhrase // three adjacent words
)

// visitor receives what a scan finds: lexical terms and absolute paths with
// their workspace (whether they name a working directory).
type visitor interface {
	term(h term, kind int)
	path(p, ws string, workdir bool)
}

// scan tokenizes s: words (runs of letters, digits and '_', lower-cased,
// two bytes or more, stop words dropped; in scripts written without
// spaces, pairs of adjacent characters), pairs of adjacent words, file-like
// tokens (a run holding a '/' or ending in an extension, relative to the
// working directory of f) and absolute paths.
func scan(s string, f *frame, v visitor) {
	n := len(s)
	var prev [2]term // the last two words, for pairs and phrases; 0 after a break
	for i := 0; i < n; {
		c := s[i]
		if c == '\\' && i+1 < n { // JSON escape: "\n", "\t", "\""
			i += 2
			prev = [2]term{}
			continue
		}
		if c >= utf8.RuneSelf {
			i = runes(s, i, &prev, v)
			continue
		}
		if !pathByte(c) {
			if breaks(c) {
				prev = [2]term{}
			}
			i++
			continue
		}
		j := i
		for j < n && pathByte(s[j]) {
			j++
		}
		run := s[i:j]
		if strings.IndexByte(run, '/') >= 0 {
			// A path or dotted name: its parts are words, not a phrase.
			var none [2]term
			words(run, &none, v)
			prev = [2]term{}
		} else {
			words(run, &prev, v)
		}
		fileish(s, i, run, f, v)
		i = j
	}
}

// breaks reports whether c ends a phrase: sentence punctuation and line
// ends; quotes, brackets and commas do not.
func breaks(c byte) bool {
	return c == ';' || c == ':' || c == '!' || c == '?' || c == '\n' || c == '\r' || c == '|' || c == '=' || c == '{' || c == '}'
}

// emit reports a word, the pair it makes with the previous word and the
// phrase it makes with the two before.
func emit(h term, prev *[2]term, v visitor) {
	v.term(h, kindWord)
	if prev[1] != 0 {
		pair := term((uint64(prev[1])^pairSeed)*fnvPrime ^ uint64(h))
		v.term(pair, kindPair)
		if prev[0] != 0 {
			v.term(term((uint64(prev[0])^pairSeed)*fnvPrime^uint64(pair)), kindPhrase)
		}
	}
	prev[0], prev[1] = prev[1], h
}

// words hashes the word runs of a path-class run.
func words(run string, prev *[2]term, v visitor) {
	for i := 0; i < len(run); {
		if !str.WordByte(run[i]) {
			i++
			continue
		}
		h := uint64(fnvOffset)
		j := i
		digits := true
		for ; j < len(run) && str.WordByte(run[j]); j++ {
			c := lower(run[j])
			if c < '0' || c > '9' {
				digits = false
			}
			h = (h ^ uint64(c)) * fnvPrime
		}
		if j-i >= 2 && !digits && !stop[term(h)] {
			emit(term(h), prev, v)
		}
		i = j
	}
}

// runes reads the run of non-ASCII letters and digits at s[i:] and returns
// its end. A word of a spaced script (Cyrillic, Greek, ...) is one term,
// lower-cased; a run in a script written without spaces (Han, Kana,
// Hangul, Thai) gives a term per pair of adjacent characters, so that
// "日期解析" matches "解析器".
func runes(s string, i int, prev *[2]term, v visitor) int {
	start := i
	dense := false
	var last rune = -1
	h := uint64(fnvOffset)
	count := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r < utf8.RuneSelf && !str.WordByte(byte(r)) || r >= utf8.RuneSelf && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			break
		}
		i += size
		r = unicode.ToLower(r)
		if isDense(r) {
			dense = true
			if last >= 0 {
				emit(hashRunes(last, r), prev, v)
			}
			last = r
			continue
		}
		last = -1
		for _, b := range []byte(string(r)) {
			h = (h ^ uint64(b)) * fnvPrime
		}
		count++
	}
	if i == start { // a non-letter rune (punctuation, an emoji)
		_, size := utf8.DecodeRuneInString(s[i:])
		*prev = [2]term{}
		return i + size
	}
	if !dense && count >= 2 {
		emit(term(h), prev, v)
	}
	return i
}

// isDense reports whether r belongs to a script written without spaces.
func isDense(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}

func hashRunes(a, b rune) term {
	h := uint64(fnvOffset)
	for _, r := range [2]rune{a, b} {
		h = (h ^ uint64(r)) * fnvPrime
	}
	return term(h)
}

// fileish reports file tokens of a run (its path relative to the working
// directory and its base name) and, for an absolute path, the path itself
// with its workspace.
func fileish(s string, at int, run string, f *frame, v visitor) {
	run = strings.TrimRight(run, ".-")
	if run == "" {
		return
	}
	slash := strings.IndexByte(run, '/')
	base := run[strings.LastIndexByte(run, '/')+1:]
	ext := strings.LastIndexByte(base, '.')
	isFile := ext > 0 && ext < len(base)-1 && letter(base[ext+1])
	if slash < 0 && !isFile {
		return
	}
	rel := run
	if run[0] == '/' {
		if strings.HasPrefix(run, "//") || (at > 0 && s[at-1] == ':') {
			return // a URL, not a path
		}
		var ws string
		ws, rel = f.place(run)
		v.path(run, ws, workdirBefore(s, at))
	}
	rel = strings.TrimPrefix(rel, "./")
	if rel != "" && strings.IndexByte(rel, '/') >= 0 {
		v.term(hashFile(rel), kindFile)
	}
	if isFile {
		v.term(hashFile(base), kindFile)
	}
}

// workdirBefore reports whether the path at s[at:] is a working directory:
// the target of "cd" or the value of a workdir, cwd or working_dir
// argument (a JSON key, or a bare one in the JavaScript of Codex's exec
// tool: `{cmd: "ls", workdir: "/work/ws1"}`).
func workdirBefore(s string, at int) bool {
	head := strings.TrimRight(s[max(0, at-16):at], ` "'=:\`)
	if strings.HasSuffix(head, "cd") {
		return true
	}
	for _, key := range []string{"workdir", "cwd", "working_dir"} {
		if rest, ok := strings.CutSuffix(head, key); ok && (rest == "" || !str.WordByte(rest[len(rest)-1])) {
			return true
		}
	}
	return false
}

func hashFile(s string) term {
	h := uint64(fnvOffset ^ fileSeed)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(lower(s[i]))) * fnvPrime
	}
	return term(h)
}

func hashWord(s string) term {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(lower(s[i]))) * fnvPrime
	}
	return term(h)
}

func pathByte(c byte) bool {
	return str.WordByte(c) || c == '/' || c == '.' || c == '-' || c == '~'
}

func letter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c | 0x20
	}
	return c
}

// stop holds common English words and chat filler that say nothing about
// which task a request belongs to.
var stop = func() map[term]bool {
	m := map[term]bool{}
	for _, w := range strings.Fields(`the a an and or but if then else of to in on at by for with from
		as is are was were be been being it its this that these those there here i you we he she they
		me my our your their them us do does did done not no so can could would should will shall may
		might must have has had what which who whom when where why how all any some each other into
		out up down over under again just also only than too very let lets please ok okay yes`) {
		m[hashWord(w)] = true
	}
	return m
}()
