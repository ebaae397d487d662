package spec

import (
	"slices"
	"strings"
)

// filePatch is one file's part of a git diff: from its "diff --git" line to
// the next one.
type filePatch struct {
	text  string
	paths []string // every path it names: old and new side, rename source and target
}

// splitPatch cuts a git diff into its files' parts. Text before the first
// "diff --git" line (a commit message, say) comes back as head.
func splitPatch(patch string) (head string, files []filePatch) {
	start := -1
	flush := func(end int) {
		if start >= 0 {
			text := patch[start:end]
			files = append(files, filePatch{text: text, paths: PatchPaths(text)})
		} else {
			head = patch[:end]
		}
	}
	off := 0
	for line := range strings.Lines(patch) {
		if strings.HasPrefix(line, "diff --git ") {
			flush(off)
			start = off
		}
		off += len(line)
	}
	flush(len(patch))
	return head, files
}

// patchPaths returns every path a patch names in its headers: the changed
// files (ChangedFiles) and the old side of modifications, deletions and
// renames.
func PatchPaths(patch string) []string {
	paths := ChangedFiles(patch)
	add := func(p string) {
		if p != "" && p != "/dev/null" && !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	for line := range strings.Lines(patch) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "--- a/"):
			add(diffPath(line[len("--- a/"):]))
		case strings.HasPrefix(line, "rename from "):
			add(line[len("rename from "):])
		case strings.HasPrefix(line, "rename to "):
			add(line[len("rename to "):])
		case strings.HasPrefix(line, "copy to "):
			add(line[len("copy to "):])
		}
	}
	return paths
}

// StripFiles removes from a git diff every file part that names one of
// files (old or new side), and returns what is left and the paths of the
// parts removed, in order. The verifier uses it to keep a model's patch
// away from the files a task's test patch sets (see Verify).
func StripFiles(patch string, files []string) (kept string, stripped []string) {
	head, parts := splitPatch(patch)
	var b strings.Builder
	b.WriteString(head)
	for _, p := range parts {
		if i := slices.IndexFunc(p.paths, func(f string) bool { return slices.Contains(files, f) }); i >= 0 {
			stripped = append(stripped, p.paths[i])
			continue
		}
		b.WriteString(p.text)
	}
	return b.String(), stripped
}
