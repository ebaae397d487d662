package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	benchspec "github.com/rcm-dev/rcm/bench/spec"
)

// Repos finds the local clones of the tasks' repositories: for a
// repository "owner/name", the first of DIR/owner/name, DIR/name and
// DIR/owner__name that is a git repository. Nothing is fetched: checkouts
// are git worktrees of these clones.
type Repos struct {
	Dir string

	mu    sync.Mutex
	locks map[string]*sync.Mutex // per clone: git worktree add/remove
}

// Path returns the clone of repository, or an error naming the places
// looked in.
func (r *Repos) Path(ctx context.Context, repository string) (string, error) {
	owner, name, ok := strings.Cut(repository, "/")
	cands := []string{filepath.Join(r.Dir, filepath.FromSlash(repository))}
	if ok {
		cands = append(cands, filepath.Join(r.Dir, name), filepath.Join(r.Dir, owner+"__"+name))
	}
	for _, c := range cands {
		if st, err := os.Stat(c); err != nil || !st.IsDir() {
			continue
		}
		if _, err := git(ctx, c, "rev-parse", "--git-dir"); err == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("bench: repository %s: no git clone at %s", repository, strings.Join(cands, " or "))
}

// Commit resolves commit (HEAD when empty) in the clone of repository to a
// full hash, or says that it is not there.
func (r *Repos) Commit(ctx context.Context, repository, commit string) (string, error) {
	dir, err := r.Path(ctx, repository)
	if err != nil {
		return "", err
	}
	ref := commit
	if ref == "" {
		ref = "HEAD"
	}
	out, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("bench: repository %s: commit %q not found in %s (fetch it into the clone first)", repository, ref, dir)
	}
	return strings.TrimSpace(out), nil
}

// Commits resolves the base commit of every task of the sessions (all of
// the spec's when sessions is nil), keyed by repoKey, and reports every
// repository or commit that is missing.
func (r *Repos) Commits(ctx context.Context, spec *benchspec.Spec, sessions []*benchspec.Session) (map[string]string, error) {
	if sessions == nil {
		for i := range spec.Sessions {
			sessions = append(sessions, &spec.Sessions[i])
		}
	}
	commits := map[string]string{}
	var errs []error
	for _, s := range sessions {
		for _, id := range append([]string{s.Focus}, s.Distractors...) {
			t, _ := spec.Task(id)
			if _, ok := commits[repoKey(t)]; ok {
				continue
			}
			c, err := r.Commit(ctx, t.Repository, t.BaseCommit)
			if err != nil {
				errs = append(errs, fmt.Errorf("task %s: %w", t.ID, err))
			}
			commits[repoKey(t)] = c
		}
	}
	return commits, errors.Join(errs...)
}

func repoKey(t *benchspec.Task) string { return t.Repository + "@" + t.BaseCommit }

func (r *Repos) lock(clone string) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.locks == nil {
		r.locks = map[string]*sync.Mutex{}
	}
	if r.locks[clone] == nil {
		r.locks[clone] = &sync.Mutex{}
	}
	return r.locks[clone]
}

// Checkout is a git worktree of a clone at a commit.
type Checkout struct {
	Dir    string
	Clone  string
	Commit string
}

// Add makes a detached worktree of repository at commit in dir, replacing
// whatever a previous, interrupted attempt left there.
func (r *Repos) Add(ctx context.Context, repository, commit, dir string) (*Checkout, error) {
	clone, err := r.Path(ctx, repository)
	if err != nil {
		return nil, err
	}
	l := r.lock(clone)
	l.Lock()
	defer l.Unlock()
	if _, err := os.Stat(dir); err == nil {
		git(ctx, clone, "worktree", "remove", "--force", dir)
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("bench: checkout %s: %w", dir, err)
		}
	}
	git(ctx, clone, "worktree", "prune")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("bench: checkout: %w", err)
	}
	if _, err := git(ctx, clone, "worktree", "add", "--detach", "--force", dir, commit); err != nil {
		return nil, fmt.Errorf("bench: checkout of %s at %s: %w", repository, short(commit), err)
	}
	return &Checkout{Dir: dir, Clone: clone, Commit: commit}, nil
}

// Remove deletes the worktree and its entry in the clone.
func (r *Repos) Remove(c *Checkout) error {
	l := r.lock(c.Clone)
	l.Lock()
	defer l.Unlock()
	// Not the caller's context: cleaning up after an interrupt must work.
	ctx := context.Background()
	_, err := git(ctx, c.Clone, "worktree", "remove", "--force", c.Dir)
	if err != nil {
		err = os.RemoveAll(c.Dir)
		git(ctx, c.Clone, "worktree", "prune")
	}
	return err
}

// Diff returns the checkout's changes against its commit as a binary-safe
// patch, new files included (they are staged in the worktree's own index).
func (c *Checkout) Diff(ctx context.Context) ([]byte, error) {
	if _, err := git(ctx, c.Dir, "add", "-A"); err != nil {
		return nil, fmt.Errorf("bench: diff of %s: %w", c.Dir, err)
	}
	out, err := git(ctx, c.Dir, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", c.Commit)
	if err != nil {
		return nil, fmt.Errorf("bench: diff of %s: %w", c.Dir, err)
	}
	return []byte(out), nil
}

// Apply applies patch to the checkout; an empty patch applies trivially.
func (c *Checkout) Apply(ctx context.Context, patch []byte) error {
	if len(bytes.TrimSpace(patch)) == 0 {
		return nil
	}
	_, err := gitRun(ctx, c.Dir, nil, patch, "apply", "--whitespace=nowarn", "-")
	return err
}

// CheckPatch reports whether patch applies to commit of repository's clone,
// without a checkout: it is checked against the commit's tree read into a
// throwaway index.
func (r *Repos) CheckPatch(ctx context.Context, repository, commit string, patch []byte) error {
	clone, err := r.Path(ctx, repository)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "rcm-bench-index-")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if _, err := gitRun(ctx, clone, env, nil, "read-tree", commit); err != nil {
		return err
	}
	_, err = gitRun(ctx, clone, env, patch, "apply", "--cached", "--check", "-")
	return err
}

// git runs git in dir and returns its standard output; the error carries
// standard error.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitRun(ctx, dir, nil, nil, args...)
}

// gitRun is git with extra environment and standard input.
func gitRun(ctx context.Context, dir string, env []string, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", errors.New("git not found on PATH")
		}
		return stdout.String(), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// gitEnv keeps the user's git settings that could change a diff (external
// diff drivers, pagers, hooks prompting) out of the way.
func gitEnv() []string {
	return append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "GIT_EXTERNAL_DIFF=", "LC_ALL=C")
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
