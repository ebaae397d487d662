package spec

import (
	"fmt"
	"hash/fnv"
	"path"
	"strings"
	"unicode/utf8"
)

// Layouts of a replayed session's checkouts (Spec.Layout).
const (
	// LayoutCheckout gives each task of a session its own checkout
	// (ws1..ws5 under the checkout root) and names it in the task's
	// requests.
	LayoutCheckout = "checkout"
	// LayoutShared puts every task of a session in one checkout of the
	// repository, opened directly by the harness (its working directory),
	// as most people use an agent. Requests never name a path or a task
	// id: a returning request names its task by the issue's title.
	LayoutShared = "shared"
)

// How the shared layout's returning requests name their task (Spec.Returns).
const (
	// ReturnsTitle quotes the issue's title.
	ReturnsTitle = "title"
	// ReturnsUntitled says "that issue": only the words of the request
	// (the discussion it pastes) and the agent's work tell the task.
	ReturnsUntitled = "untitled"
)

// untitled is how a returning request names its task under ReturnsUntitled.
const untitled = "that issue"

// shared reports whether the spec replays in the shared layout.
func (s *Spec) shared() bool { return s.Layout == LayoutShared }

// sharedCheckout is the one checkout of a session in the shared layout:
// the repository's name under the checkout root ("/work/django").
func (s *Spec) sharedCheckout(sess *Session) string {
	name := "repo"
	if t, ok := s.Task(sess.Focus); ok && t.Repository != "" {
		name = path.Base(t.Repository)
	}
	return path.Join(s.Root(), name)
}

// The request templates of the importers (issueRequest, HintsRequest,
// submitRequest, the first request of a multi-turn trajectory), by the text
// before the placeholder and after it.
const (
	issueHead = "In the checkout " + CheckoutPlaceholder + " ("
	issueMark = "fix this issue:\n\n"
	hintsHead = "More context on the issue in " + CheckoutPlaceholder + ", from its discussion:\n\n"
	turnHead  = "In the checkout " + CheckoutPlaceholder + ": "
)

// Phrasings of the shared layout's returning requests, picked per task and
// stage so that no one sentence marks a return; %s is the issue's title.
var (
	hintsPhrases = []string{
		"More context on %s, from the issue's discussion:\n\n",
		"Back to %s. Here is what the discussion of that issue said:\n\n",
		"Some more on %s from the thread:\n\n",
	}
	submitPhrases = []string{
		"Let's wrap up %s: make sure the fix is complete and the tests pass.",
		"Finish %s: check that the fix is complete and that the tests pass.",
		"Submit the fix for %s once it is complete and the tests pass.",
	}
)

// sharedRequest is stage i of t as a person asks for it in one shared
// checkout: the issue as given, a returning request naming the issue by its
// title (or as "that issue" when untitled); never a path or the task's id.
func sharedRequest(t *Task, i int, untitledReturns bool) string {
	st := t.Stages[i]
	pick := func(phrases []string) string {
		h := fnv.New32a()
		fmt.Fprintf(h, "%s#%d", t.ID, i)
		return phrases[h.Sum32()%uint32(len(phrases))]
	}
	title := Title(t)
	if untitledReturns {
		title = untitled
	}
	if st.Submit {
		return fmt.Sprintf(pick(submitPhrases), title)
	}
	req := st.Request
	switch {
	case strings.HasPrefix(req, issueHead) && strings.Contains(req, issueMark):
		_, issue, _ := strings.Cut(req, issueMark)
		return "Please fix this issue:\n\n" + issue
	case strings.HasPrefix(req, hintsHead):
		return fmt.Sprintf(pick(hintsPhrases), title) + strings.TrimPrefix(req, hintsHead)
	case strings.HasPrefix(req, turnHead):
		return strings.TrimPrefix(req, turnHead)
	}
	return strings.ReplaceAll(req, CheckoutPlaceholder, "the repository")
}

// titleCap bounds a title in runes.
const titleCap = 90

// Title is how a person names task t: the first line of its issue (an
// issue statement opens with its title), or of its first request, quoted.
func Title(t *Task) string {
	if len(t.Stages) == 0 {
		return `"` + t.ID + `"`
	}
	req := t.Stages[0].Request
	if _, issue, ok := strings.Cut(req, issueMark); ok {
		req = issue
	}
	req = strings.TrimPrefix(req, turnHead)
	line := ""
	for l := range strings.SplitSeq(req, "\n") {
		if line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#*> ")); line != "" {
			break
		}
	}
	if utf8.RuneCountInString(line) > titleCap {
		r := []rune(line)[:titleCap]
		line = strings.TrimSpace(string(r)) + "..."
	}
	return `"` + strings.TrimRight(line, ".:") + `"`
}
