package memory

import (
	"path"
	"regexp"
	"strings"
)

// simple is one simple command of a shell command line: its words (quotes
// removed), the files its output is redirected to, the files it reads
// through "<", and the bodies of its here-documents.
type simple struct {
	args    []string
	out, in []string
	here    []string
}

// shellEffects is what a bash command line tells about files: the
// directories it changes into, the files it reads and the files it changes.
// Paths are cleaned and, when relative, resolved against the directory in
// effect (cwd, then each "cd"); they stay relative when no directory is known.
type shellEffects struct {
	dirs          []string
	read, changed []string
}

// bashEffects reads a command line the way a reviewer skims it: it knows
// the common ways agents look at files (cat, nl, head, tail, grep, sed -n,
// python scripts that open files) and change them (sed -i, tee, redirects,
// mv, cp, rm, touch, git apply and patch with a here-document, python
// writing files). It is a heuristic over a small shell lexer, never an
// interpreter: variables, globs and command substitutions are left alone.
func bashEffects(cmd, cwd string) shellEffects {
	var e shellEffects
	abs := func(p string) string {
		if !usablePath(p) {
			return ""
		}
		if !path.IsAbs(p) && cwd != "" {
			p = path.Join(cwd, p)
		}
		return path.Clean(p)
	}
	add := func(to *[]string, p string) {
		if p = abs(p); p != "" {
			*to = append(*to, p)
		}
	}
	for _, s := range lexShell(cmd) {
		for _, p := range s.out {
			add(&e.changed, p)
		}
		for _, p := range s.in {
			add(&e.read, p)
		}
		args := commandWords(s.args)
		if len(args) == 0 {
			continue
		}
		name, rest := path.Base(args[0]), args[1:]
		switch name {
		case "cd", "pushd":
			if len(rest) > 0 {
				if d := abs(rest[0]); d != "" {
					cwd = d
					e.dirs = append(e.dirs, d)
				}
			}
		case "cat", "nl", "less", "more", "wc", "bat", "diff", "stat", "file":
			for _, p := range operands(rest, nil) {
				add(&e.read, p)
			}
		case "head", "tail":
			for _, p := range operands(rest, []string{"-n", "-c"}) {
				add(&e.read, p)
			}
		case "grep", "egrep", "fgrep", "rg":
			if !hasFlag(rest, "-r", "-R", "--recursive") {
				for _, p := range grepFiles(rest) {
					add(&e.read, p)
				}
			}
		case "sed":
			files := sedFiles(rest)
			if hasFlagPrefix(rest, "-i", "--in-place") {
				for _, p := range files {
					add(&e.changed, p)
				}
			} else {
				for _, p := range files {
					add(&e.read, p)
				}
			}
		case "awk":
			ops := operands(rest, []string{"-F", "-v", "-f"})
			if len(ops) > 1 {
				for _, p := range ops[1:] {
					add(&e.read, p)
				}
			}
		case "tee", "touch", "rm", "truncate":
			for _, p := range operands(rest, []string{"-s"}) {
				add(&e.changed, p)
			}
		case "mv":
			for _, p := range operands(rest, []string{"-t", "-S"}) {
				add(&e.changed, p)
			}
		case "cp":
			if ops := operands(rest, []string{"-t", "-S"}); len(ops) > 1 {
				add(&e.changed, ops[len(ops)-1])
			}
		case "patch":
			for _, h := range s.here {
				for _, p := range diffFiles(h) {
					add(&e.changed, p)
				}
			}
		case "git":
			if len(rest) > 0 && rest[0] == "apply" {
				for _, h := range s.here {
					for _, p := range diffFiles(h) {
						add(&e.changed, p)
					}
				}
			}
		default:
			if !strings.HasPrefix(name, "python") {
				break
			}
			var src []string
			if i := indexOf(rest, "-c"); i >= 0 && i+1 < len(rest) {
				src = append(src, rest[i+1])
			}
			src = append(src, s.here...)
			for _, code := range src {
				r, w := pythonFiles(code)
				for _, p := range r {
					add(&e.read, p)
				}
				for _, p := range w {
					add(&e.changed, p)
				}
			}
		}
	}
	return e
}

// usablePath rejects what cannot be a file name worth recording: devices,
// options, globs, variables and substitutions.
func usablePath(p string) bool {
	if p == "" || p == "-" || p == "." || p == ".." || len(p) > 512 || strings.HasPrefix(p, "/dev/") ||
		strings.HasPrefix(p, "-") || strings.HasSuffix(p, "/") {
		return false
	}
	return !strings.ContainsAny(p, "*?[]{}$`\n\t ")
}

// commandWords drops what precedes the command proper: variable
// assignments and wrappers such as sudo, env, time, timeout N.
func commandWords(args []string) []string {
	for len(args) > 0 {
		a := args[0]
		switch {
		case strings.Contains(a, "=") && !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "="):
			args = args[1:]
		case a == "sudo" || a == "env" || a == "time" || a == "command" || a == "exec" || a == "nohup":
			args = args[1:]
		case a == "timeout" && len(args) > 1:
			args = args[2:]
		default:
			return args
		}
	}
	return nil
}

// operands returns the non-option arguments; options in withValue take the
// next word as their value.
func operands(args, withValue []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i+1:]...)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if indexOf(withValue, a) >= 0 {
				i++
			}
		default:
			out = append(out, a)
		}
	}
	return out
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

func hasFlag(args []string, flags ...string) bool {
	for _, a := range args {
		if indexOf(flags, a) >= 0 {
			return true
		}
		// Combined short flags such as -rn.
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], "rR") && indexOf(flags, "-r") >= 0 {
			return true
		}
	}
	return false
}

func hasFlagPrefix(args []string, prefixes ...string) bool {
	for _, a := range args {
		for _, p := range prefixes {
			if strings.HasPrefix(a, p) {
				return true
			}
		}
	}
	return false
}

// grepFiles returns the file operands of a grep: everything after the
// pattern (which -e or -f may give instead).
func grepFiles(args []string) []string {
	ops := operands(args, []string{"-e", "-f", "-A", "-B", "-C", "-m", "--max-count", "-g", "--glob", "-t", "--type"})
	if hasFlag(args, "-e", "-f") {
		return ops
	}
	if len(ops) > 0 {
		return ops[1:]
	}
	return nil
}

// sedFiles returns the file operands of a sed: everything after the script
// (which -e or -f may give instead).
func sedFiles(args []string) []string {
	ops := operands(args, []string{"-e", "-f", "--expression", "--file"})
	if hasFlag(args, "-e", "-f", "--expression", "--file") {
		return ops
	}
	if len(ops) > 0 {
		return ops[1:]
	}
	return nil
}

var (
	diffHeader = regexp.MustCompile(`(?m)^(?:\+\+\+|---) (?:[ab]/)?(\S+)|^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$`)
	pyWrite    = regexp.MustCompile(`open\(\s*(?:r|f)?['"]([^'"\n]+)['"]\s*,\s*(?:mode\s*=\s*)?['"][rb+]*[wax]|Path\(\s*['"]([^'"\n]+)['"]\s*\)\.write_(?:text|bytes)`)
	pyRead     = regexp.MustCompile(`open\(\s*(?:r|f)?['"]([^'"\n]+)['"]\s*(?:\)|,\s*(?:mode\s*=\s*)?['"]r)|Path\(\s*['"]([^'"\n]+)['"]\s*\)\.read_(?:text|bytes)`)
)

// diffFiles returns the files a unified diff or an apply_patch envelope
// ("*** Update File: x") touches.
func diffFiles(d string) []string {
	var out []string
	for _, m := range diffHeader.FindAllStringSubmatch(d, -1) {
		for _, p := range m[1:] {
			if p != "" && p != "/dev/null" {
				out = append(out, p)
			}
		}
	}
	return out
}

// pythonFiles returns the files a python snippet opens for reading and for
// writing (open(...), pathlib read_/write_ calls with literal names).
func pythonFiles(code string) (read, written []string) {
	for _, m := range pyWrite.FindAllStringSubmatch(code, -1) {
		written = append(written, m[1]+m[2])
	}
	for _, m := range pyRead.FindAllStringSubmatch(code, -1) {
		read = append(read, m[1]+m[2])
	}
	return read, written
}

// lexShell splits a command line into simple commands. It knows quotes,
// backslashes, comments, the separators ; & && | || and newlines,
// subshell parentheses, redirections (n>, >>, &>, <, n>&m) and
// here-documents (<<EOF, <<'EOF', <<-EOF, whose bodies it collects) and
// here-strings. Command substitutions stay inside their word. Unterminated
// quotes end at the end of the input.
func lexShell(s string) []simple {
	var (
		out     []simple
		cur     simple
		word    strings.Builder
		inWord  bool
		target  *[]string // where the next word goes instead of args
		heredoc []string  // pending here-document delimiters ("-" prefix: <<-)
		hereFor []int     // index in out of the command each delimiter belongs to
	)
	endWord := func() {
		if !inWord {
			return
		}
		w := word.String()
		word.Reset()
		inWord = false
		if target != nil {
			*target = append(*target, w)
			target = nil
			return
		}
		cur.args = append(cur.args, w)
	}
	endCmd := func() {
		endWord()
		target = nil
		if len(cur.args) > 0 || len(cur.out) > 0 || len(cur.in) > 0 {
			out = append(out, cur)
		}
		cur = simple{}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				word.WriteString(s[i+1:])
				i = len(s)
				break
			}
			word.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
				}
				word.WriteByte(s[i])
			}
		case c == '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					inWord = true
					word.WriteByte(s[i])
				}
			}
		case c == '$' && i+1 < len(s) && s[i+1] == '(' || c == '`':
			// A command substitution stays in its word, unparsed.
			inWord = true
			j := substitutionEnd(s, i)
			word.WriteString(s[i:j])
			i = j - 1
		case c == '#' && !inWord:
			for i < len(s) && s[i] != '\n' {
				i++
			}
			i--
		case c == ' ' || c == '\t' || c == '\r':
			endWord()
		case c == '\n':
			endCmd()
			if len(heredoc) > 0 {
				i = readHeredocs(s, i+1, heredoc, hereFor, out) - 1
				heredoc, hereFor = nil, nil
			}
		case c == ';' || c == '&' || c == '|' || c == '(' || c == ')':
			if c == '&' && i+1 < len(s) && s[i+1] == '>' { // &> file
				endWord()
				i++
				if i+1 < len(s) && s[i+1] == '>' {
					i++
				}
				target = &cur.out
				break
			}
			endCmd()
		case c == '>':
			// A word of digits just before is a file descriptor.
			if inWord && isDigits(word.String()) {
				word.Reset()
				inWord = false
			}
			endWord()
			if i+1 < len(s) && s[i+1] == '>' {
				i++
			}
			if i+1 < len(s) && s[i+1] == '&' { // n>&m duplicates a descriptor
				i++
				for i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '-') {
					i++
				}
				break
			}
			target = &cur.out
		case c == '<':
			endWord()
			switch {
			case strings.HasPrefix(s[i:], "<<<"):
				i += 2
				var sink []string
				target = &sink
			case strings.HasPrefix(s[i:], "<<"):
				i++
				strip := false
				if i+1 < len(s) && s[i+1] == '-' {
					i++
					strip = true
				}
				// Read the delimiter word now (it may be quoted).
				for i+1 < len(s) && (s[i+1] == ' ' || s[i+1] == '\t') {
					i++
				}
				j := i + 1
				for j < len(s) && strings.IndexByte(" \t\n;&|<>()", s[j]) < 0 {
					j++
				}
				d := strings.NewReplacer("'", "", `"`, "", `\`, "").Replace(s[i+1 : j])
				if d != "" {
					if strip {
						d = "-" + d
					}
					heredoc = append(heredoc, d)
					// The command being built is out[len(out)] once it ends.
					hereFor = append(hereFor, len(out))
				}
				i = j - 1
			default:
				target = &cur.in
			}
		default:
			inWord = true
			word.WriteByte(c)
		}
	}
	endCmd()
	return out
}

// readHeredocs reads the bodies of the pending here-documents starting at
// offset i and returns the offset after the last delimiter line. The bodies
// are attached, through a marker, to the command that declared them.
func readHeredocs(s string, i int, delims []string, owners []int, out []simple) int {
	for k, d := range delims {
		strip := strings.HasPrefix(d, "-")
		d = strings.TrimPrefix(d, "-")
		var body strings.Builder
		for i < len(s) {
			j := strings.IndexByte(s[i:], '\n')
			line := s[i:]
			next := len(s)
			if j >= 0 {
				line, next = s[i:i+j], i+j+1
			}
			i = next
			cmp := strings.TrimRight(line, "\r")
			if strip {
				cmp = strings.TrimLeft(cmp, "\t")
			}
			if cmp == d {
				break
			}
			body.WriteString(line)
			body.WriteByte('\n')
		}
		if n := owners[k]; n < len(out) {
			out[n].here = append(out[n].here, body.String())
		}
	}
	return i
}

// substitutionEnd returns the offset just past the command substitution
// that starts at s[i] ("$(" or "`"), or len(s) when it does not end.
func substitutionEnd(s string, i int) int {
	if s[i] == '`' {
		if j := strings.IndexByte(s[i+1:], '`'); j >= 0 {
			return i + j + 2
		}
		return len(s)
	}
	depth := 0
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(s)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
