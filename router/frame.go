package router

import (
	"path"
	"strings"

	"github.com/rcm-dev/rcm/internal/str"
	"github.com/rcm-dev/rcm/transcript"
)

// frame is where the harness works: its working directory, read from its
// own system prompt, and whether that directory is one git repository.
// Paths are taken relative to it; a turn's workspace is the folder below it
// (or the git worktree) the turn works in.
type frame struct {
	cwd string // absolute, cleaned; "" when neither said nor inferred
	// repo: cwd is a repository, so its folders are parts of one
	// checkout, not checkouts of their own.
	repo bool
	// outside: in a repository, a tool call of the turns read so far
	// works in a folder outside it, or an earlier turn was placed by its
	// checkout (a label of method workspace). Until then, folders outside it
	// that a request or a tool call merely mentions are no checkouts:
	// they are a pasted log's, a stack trace's, a URL's or a library's.
	outside bool
}

// checkout reports whether workspace ws, found in a request or a tool
// call's path (not its working directory), counts as a checkout.
func (f *frame) checkout(ws string) bool {
	return !f.repo || f.outside || !strings.HasPrefix(ws, "/")
}

// harnessCWD is how each harness states its working directory in the
// system prompt (or, for Codex, in the environment context it sends as the
// first input), and whether it is a git repository.
var harnessCWD = []struct {
	harness       string
	before, after string // the directory is between them
	repo          string // the marker of a git repository; "": Codex, whose turn metadata lists it (inRepo)
}{
	{"opencode", "Working directory: ", "\n", "Is directory a git repo: yes"},
	{"claude-code", "Primary working directory: ", "\n", "Is a git repository: true"},
	{"codex", "<cwd>", "</cwd>", ""},
}

// frameCap bounds the bytes of the preamble searched for the working
// directory (harnesses' system prompts are tens of KiB).
const frameCap = 256 << 10

// readFrame finds the working directory in the transcript's preamble (or the
// first request, where Codex puts its environment context). When no harness
// states it, the frame is inferred: the parent of the first folder the first
// turn names as its working directory, so that sibling folders are separate
// workspaces and one folder is one.
func readFrame(t *transcript.Transcript) frame {
	end := t.Preamble
	if len(t.Turns) > 0 {
		end = t.Turns[0].Start + 1
	}
	texts := func(yield func(string) bool) {
		// A system prompt outside the messages (Anthropic's system field,
		// Responses' instructions) first.
		if !yield(t.Instructions()) {
			return
		}
		// Codex states its directory anew, before the request, when a
		// thread is resumed in another one: the latest is where it works
		// now, and the one its turn metadata describes (inRepo).
		for i := len(t.Messages) - 1; i >= 0 && t.Format == transcript.OpenAIResponses; i-- {
			if m := &t.Messages[i]; m.Role == "developer" {
				if text := m.Text(); strings.HasPrefix(strings.TrimSpace(text), "<environment_context>") {
					if !yield(text) {
						return
					}
					break
				}
			}
		}
		for i := range t.Messages {
			// Claude Code sends its environment as a role "system" entry
			// among the messages, after the first request (and, after a
			// compaction, after the current one).
			if m := &t.Messages[i]; (i < end || m.Role == "system") && !yield(m.Text()) {
				return
			}
		}
	}
	for text := range texts {
		text = str.Clip(text, frameCap)
		for _, h := range harnessCWD {
			k := strings.Index(text, h.before)
			if k < 0 {
				continue
			}
			rest := text[k+len(h.before):]
			if e := strings.Index(rest, h.after); e >= 0 {
				rest = rest[:e]
			}
			dir := strings.TrimSpace(rest)
			if !strings.HasPrefix(dir, "/") {
				continue
			}
			// A harness that says whether it is a repository is taken at
			// its word (no word: a folder). Codex says it in its turn
			// metadata, which lists the repository it works in; without
			// that metadata it is most often opened in one.
			f := frame{cwd: path.Clean(dir), repo: strings.Contains(text, h.repo)}
			if h.repo == "" {
				f.repo = inRepo(t, f.cwd)
			}
			return f
		}
	}
	// Inferred from the first request turns (the folders their tool calls
	// work in, or, in the first one, the paths it names) and the current
	// one's tool calls. A path quoted later in a request says nothing.
	for k, tn := range t.Turns {
		if k >= inferTurns && k < len(t.Turns)-1 || tn.Kind != transcript.Request {
			continue
		}
		if f, ok := inferFrame(t, tn, k == 0); ok {
			return f
		}
	}
	return frame{}
}

// inRepo reports whether Codex's working directory cwd is in a git
// repository its turn metadata lists (true when the call carries none).
func inRepo(t *transcript.Transcript, cwd string) bool {
	roots, ok := t.CodexRepos()
	if !ok {
		return true
	}
	for _, r := range roots {
		if r = path.Clean(r); cwd == r || strings.HasPrefix(cwd, r+"/") || r == "/" {
			return true
		}
	}
	return false
}

// inferTurns bounds the turns read to infer a frame no harness states.
const inferTurns = 4

// inferFrame takes the parent of the first folder turn tn works in (a
// working directory of its tool calls) or, with request, names (for a file,
// its folder's parent).
func inferFrame(t *transcript.Transcript, tn transcript.Turn, request bool) (frame, bool) {
	var first, named []string
	c := collector{f: &frame{}, roots: &named, raw: true}
	if request {
		scan(str.Clip(asked(t, tn), requestCap), c.f, &c)
	}
	c.roots, c.workdirs = &[]string{}, &first
	eachCall(t, tn, func(args string) { scan(str.Clip(args, argumentCap), c.f, &c) })
	for _, set := range [][]string{first, named} {
		for _, p := range set {
			if strings.Contains(p, "/.") {
				continue // a hidden folder: tools, caches, not projects
			}
			d := path.Dir(p)
			if b := path.Base(p); strings.IndexByte(b, '.') > 0 {
				d = path.Dir(d) // a file: its folder is the project
			}
			top, _, _ := strings.Cut(strings.TrimPrefix(d, "/"), "/")
			if d != "/" && d != "." && !systemDirs[top] {
				return frame{cwd: d}, true
			}
		}
	}
	return frame{}, false
}

// systemDirs are top-level directories that hold no one's checkout: paths
// under them ("/dev/null", "/usr/lib/...") name no workspace unless the
// working directory is there too ("/tmp/x" when the harness works in /tmp).
var systemDirs = map[string]bool{
	"bin": true, "boot": true, "dev": true, "etc": true, "lib": true, "lib64": true,
	"nix": true, "opt": true, "proc": true, "run": true, "sbin": true, "snap": true,
	"sys": true, "tmp": true, "usr": true, "var": true, "private": true,
	"System": true, "Library": true, "Applications": true, "Volumes": true,
}

// worktreeDirs hold git worktrees inside a repository: a path through
// ".worktrees/NAME" works in that worktree, a workspace of its own.
var worktreeDirs = map[string]bool{".worktrees": true, "worktrees": true, ".claude-worktrees": true}

// place returns the workspace of absolute path p ("" for none) and p
// relative to the working directory (or, outside it, to its workspace), for
// file terms. Inside a repository everything is one workspace, "."; in a
// folder of projects each folder below it is one; outside the working
// directory the folder beside it (or the top folder) is.
func (f *frame) place(p string) (ws, rel string) {
	p = path.Clean(p)
	if f.cwd != "" && (p == f.cwd || strings.HasPrefix(p, f.cwd+"/") || f.cwd == "/") {
		rel = strings.TrimPrefix(strings.TrimPrefix(p, f.cwd), "/")
		first, rest, deeper := strings.Cut(rel, "/")
		switch {
		case rel == "":
			return ".", ""
		case f.repo:
			if i := worktreeAt(rel); i > 0 {
				return rel[:i], strings.TrimPrefix(rel[i:], "/")
			}
			return ".", rel
		case !deeper && strings.IndexByte(first, '.') > 0:
			return ".", rel // a file beside the projects
		case strings.HasPrefix(first, "."):
			return "", rest
		}
		return first, rel
	}
	if f.cwd == "" {
		return "", strings.TrimPrefix(p, "/")
	}
	top, below, _ := strings.Cut(p[1:], "/")
	if systemDirs[top] && !strings.HasPrefix(f.cwd, "/"+top+"/") || strings.HasPrefix(top, ".") {
		return "", below
	}
	// Beside the working directory: the first folder where p leaves it.
	base := ""
	for d := f.cwd; d != "/"; d = path.Dir(d) {
		if strings.HasPrefix(p, d+"/") {
			base = d
			break
		}
	}
	rest := strings.TrimPrefix(p, base+"/")
	name, after, _ := strings.Cut(rest, "/")
	if base == "" {
		// A tree that shares only the root with the working directory
		// ("/work/ws1" from /home/dev/project): its checkouts are the
		// folders one level down. A lone name ("/repr", "/api") is a URL
		// path or a symbol.
		sub, deeper, _ := strings.Cut(after, "/")
		if sub == "" || strings.HasPrefix(sub, ".") || deeper == "" && strings.IndexByte(sub, '.') > 0 {
			return "", after
		}
		name, after = name+"/"+sub, deeper
	}
	if name == "" || strings.HasPrefix(name, ".") || (after == "" && strings.IndexByte(name, '.') > 0) {
		return "", after
	}
	return base + "/" + name, after
}

// worktreeAt returns the end of "DIR/NAME" in rel when DIR holds worktrees,
// else 0.
func worktreeAt(rel string) int {
	off := 0
	for {
		seg, rest, ok := strings.Cut(rel[off:], "/")
		if !ok {
			return 0
		}
		if worktreeDirs[seg] {
			name, _, _ := strings.Cut(rest, "/")
			if name == "" {
				return 0
			}
			return off + len(seg) + 1 + len(name)
		}
		off += len(seg) + 1
	}
}
