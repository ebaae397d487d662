package router

import "strings"

// Caps on how much text the router reads per message. A request's head
// carries its intent (an issue statement, a file name, a checkout); tool
// arguments name the paths they touch in their first bytes. Reading no more
// keeps routing cost flat in the size of the history.
const (
	queryCap    = 16384 // bytes of the request being classified
	requestCap  = 4096  // bytes of an earlier request
	argumentCap = 320   // bytes of one tool call's arguments
	callsCap    = 16    // tool calls read per turn: the first and the last halves
)

// term is a hashed lexical token. File paths are hashed with a different
// seed so that "query.py" the file and "query" the word stay apart.
type term uint64

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
	fileSeed  = 0x9e3779b97f4a7c15
)

// visitor receives what a scan finds: lexical terms (file terms flagged) and
// absolute paths (with whether they name a working directory).
type visitor interface {
	term(h term, file bool)
	path(p string, workdir bool)
}

// scan tokenizes s: words (runs of letters, digits and '_', lower-cased,
// two bytes or more, stop words dropped), file-like tokens (a run holding a
// '/' or ending in an extension) and absolute paths.
func scan(s string, v visitor) {
	n := len(s)
	for i := 0; i < n; {
		c := s[i]
		if c == '\\' && i+1 < n { // JSON escape: "\n", "\t", "\""
			i += 2
			continue
		}
		if !pathByte(c) {
			i++
			continue
		}
		j := i
		for j < n && pathByte(s[j]) {
			j++
		}
		run := s[i:j]
		words(run, v)
		fileish(s, i, run, v)
		i = j
	}
}

// words hashes the word runs of a path-class run.
func words(run string, v visitor) {
	for i := 0; i < len(run); {
		if !wordByte(run[i]) {
			i++
			continue
		}
		h := uint64(fnvOffset)
		j := i
		digits := true
		for ; j < len(run) && wordByte(run[j]); j++ {
			c := lower(run[j])
			if c < '0' || c > '9' {
				digits = false
			}
			h = (h ^ uint64(c)) * fnvPrime
		}
		if j-i >= 2 && !digits && !stop[term(h)] {
			v.term(term(h), false)
		}
		i = j
	}
}

// fileish reports file tokens of a run (its path relative to its checkout
// and its base name) and, for an absolute path, the path itself.
func fileish(s string, at int, run string, v visitor) {
	run = strings.TrimRight(run, ".-")
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
		v.path(run, workdirBefore(s, at))
		_, rel = splitRoot(run)
	}
	rel = strings.TrimPrefix(rel, "./")
	if rel != "" && strings.IndexByte(rel, '/') >= 0 {
		v.term(hashFile(rel), true)
	}
	if isFile {
		v.term(hashFile(base), true)
	}
}

// workdirBefore reports whether the path at s[at:] is a working directory:
// the target of "cd" or the value of a "workdir"/"cwd" argument.
func workdirBefore(s string, at int) bool {
	head := strings.TrimRight(s[max(0, at-16):at], ` "'=:`)
	return strings.HasSuffix(head, "cd") || strings.HasSuffix(head, `"workdir`) ||
		strings.HasSuffix(head, `"cwd`) || strings.HasSuffix(head, `"working_dir`)
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

// systemDirs are top-level directories that hold no one's checkout: paths
// under them ("/dev/null", "/tmp/x", "/usr/lib/...") never name a task.
var systemDirs = map[string]bool{
	"bin": true, "boot": true, "dev": true, "etc": true, "lib": true, "lib64": true,
	"nix": true, "opt": true, "proc": true, "run": true, "sbin": true, "snap": true,
	"sys": true, "tmp": true, "usr": true, "var": true, "private": true,
	"System": true, "Library": true, "Applications": true, "Volumes": true,
}

// splitRoot splits an absolute path into its checkout root and the rest.
// The root is the first two components ("/work/ws3"), three under a home
// directory ("/home/dev/project", "/Users/alex/cli"). It is "" when the path
// is under a system directory, too short, or the root's last component
// looks like a file or a hidden directory.
func splitRoot(p string) (root, rel string) {
	n := 2
	first := p[1:]
	if k := strings.IndexByte(first, '/'); k >= 0 {
		first = first[:k]
	}
	if first == "home" || first == "Users" {
		n = 3
	}
	if systemDirs[first] {
		return "", strings.TrimPrefix(p[1+len(first):], "/")
	}
	end := 0
	for k := 0; k < n; k++ {
		next := strings.IndexByte(p[end+1:], '/')
		if next == 0 {
			return "", ""
		}
		if next < 0 {
			if k != n-1 {
				return "", ""
			}
			end = len(p)
			break
		}
		end += 1 + next
	}
	root = p[:end]
	last := root[strings.LastIndexByte(root, '/')+1:]
	if last == "" || strings.IndexByte(last, '.') >= 0 {
		return "", ""
	}
	return root, strings.TrimPrefix(p[end:], "/")
}

func pathByte(c byte) bool {
	return wordByte(c) || c == '/' || c == '.' || c == '-' || c == '~'
}

func wordByte(c byte) bool {
	return c == '_' || letter(c) || (c >= '0' && c <= '9')
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
