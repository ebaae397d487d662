package codex

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/rcm-dev/rcm/internal/proc"
	"github.com/tidwall/gjson"
)

// Session is one Codex conversation (a thread): each Prompt is one `codex
// exec` process in Dir, the first starting the thread, the others resuming
// it by id (`codex exec resume <thread id>`), so that every turn continues
// the same conversation.
type Session struct {
	Bin   string   // the codex binary (Install)
	Dir   string   // the working directory (Codex runs with --skip-git-repo-check)
	Env   []string // see Env
	Model string   // the model id Codex asks for (-m); its default when empty
	// Args are more `codex exec` options, before the prompt (-c key=value).
	Args []string

	thread string
}

// Thread is Codex's id of the conversation, known once a turn has started
// it ("" before).
func (s *Session) Thread() string { return s.thread }

// TurnError is a turn Codex ended with an error of its own (the model API
// failed, say): its turn.failed event.
type TurnError struct {
	Message string
}

func (e *TurnError) Error() string {
	return "codex: turn failed: " + proc.Head(e.Message)
}

// waitDelay bounds how long Wait waits for output pipes held open by
// children after codex itself has ended.
const waitDelay = 5 * time.Second

// args returns the command line of the next turn. The prompt goes on
// standard input ("-"): as an argument, a text starting with "-" would be
// read as a flag. --strict-config makes a config.toml setting this Codex
// does not know an error rather than silently ignored.
func (s *Session) args() []string {
	args := append([]string{"exec", "--json", "--strict-config", "--skip-git-repo-check"}, s.Args...)
	if s.Model != "" {
		args = append(args, "-m", s.Model)
	}
	if s.thread != "" {
		args = append(args, "resume", s.thread)
	}
	return append(args, "-")
}

// Prompt runs one turn with text as the user's message and waits for it to
// end. Cancelling ctx kills codex and everything it started; the turns
// recorded so far stay in the thread, which the next Prompt resumes. A
// turn Codex reports as failed returns a *TurnError.
func (s *Session) Prompt(ctx context.Context, text string) error {
	cmd := exec.CommandContext(ctx, s.Bin, s.args()...)
	cmd.Dir, cmd.Env = s.Dir, s.Env
	cmd.Stdin = strings.NewReader(text)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := proc.Run(cmd, waitDelay)
	ev := readEvents(stdout.Bytes())
	// The thread exists once Codex has named it, even when the turn then
	// failed or was cut short: later turns must resume it.
	if s.thread == "" {
		s.thread = ev.thread
	}
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("codex: turn aborted: %w", ctx.Err())
	case ev.failed != nil:
		return ev.failed
	case err != nil:
		return fmt.Errorf("codex: codex exec: %w: %s", err, proc.Head(stderr.String()+ev.errors))
	case ev.thread != s.thread:
		return fmt.Errorf("codex: codex ran thread %q, want %s", ev.thread, s.thread)
	case !ev.completed:
		return fmt.Errorf("codex: codex exec printed no turn.completed: %s", proc.Head(stdout.String()+stderr.String()))
	}
	return nil
}

// events is what a turn's JSONL output (--json) says.
type events struct {
	thread    string     // thread.started's thread_id
	completed bool       // turn.completed seen
	failed    *TurnError // turn.failed
	errors    string     // the error events' messages (retries, say)
}

func readEvents(out []byte) events {
	var ev events
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20) // one event may carry a long command output
	for sc.Scan() {
		line := sc.Bytes()
		switch gjson.GetBytes(line, "type").Str {
		case "thread.started":
			ev.thread = gjson.GetBytes(line, "thread_id").Str
		case "turn.completed":
			ev.completed = true
		case "turn.failed":
			ev.failed = &TurnError{Message: gjson.GetBytes(line, "error.message").Str}
		case "error":
			ev.errors += gjson.GetBytes(line, "message").Str + "\n"
		}
	}
	return ev
}
