package claudecode

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/rcm-dev/rcm/internal/proc"
)

// Session is one Claude Code session: each Prompt is one `claude -p` run in
// Dir, the first with --session-id ID, the others with --resume ID, so that
// every turn continues the same conversation under the same
// X-Claude-Code-Session-Id.
type Session struct {
	Bin   string   // the claude binary (Install)
	Dir   string   // the working directory: the task's checkout
	Env   []string // see Env
	Model string   // the model id Claude Code asks for; its default when empty
	ID    string   // a UUID (NewID)
	// AutoCompact is the context window, in tokens, past which Claude Code
	// compacts the conversation (--autocompact); its own default when 0.
	AutoCompact int

	started bool
}

// TurnError is a turn Claude Code ended with an error of its own (the
// model API failed, say): its JSON result has is_error set.
type TurnError struct {
	Subtype string
	Result  string
}

func (e *TurnError) Error() string {
	return fmt.Sprintf("claudecode: turn ended with an error (%s): %s", e.Subtype, proc.Head(e.Result))
}

// NewID returns a random version-4 UUID, the form --session-id wants.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// waitDelay bounds how long Wait waits for output pipes held open by
// children after claude itself has ended.
const waitDelay = 5 * time.Second

// Prompt runs one turn with text as the user's message and waits for it to
// end. Cancelling ctx kills claude and everything it started; the turns
// written so far stay in the session, which the next Prompt resumes. A turn
// Claude Code reports as failed returns a *TurnError.
func (s *Session) Prompt(ctx context.Context, text string) error {
	args := []string{"-p", "--output-format", "json", "--dangerously-skip-permissions"}
	if s.Model != "" {
		args = append(args, "--model", s.Model)
	}
	if s.AutoCompact > 0 {
		args = append(args, "--autocompact", strconv.Itoa(s.AutoCompact))
	}
	if s.started {
		args = append(args, "--resume", s.ID)
	} else {
		args = append(args, "--session-id", s.ID)
	}
	// The prompt goes on standard input: as an argument, a text starting
	// with "-" or "/" would be read as a flag or a slash command.
	cmd := exec.CommandContext(ctx, s.Bin, args...)
	cmd.Dir, cmd.Env = s.Dir, s.Env
	cmd.Stdin = strings.NewReader(text)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := proc.Run(cmd, waitDelay)
	// Once claude has run, the session exists on disk even when the turn
	// failed: later turns must resume it, not create it again.
	if cmd.ProcessState != nil {
		s.started = true
	}
	var res struct {
		IsError bool   `json:"is_error"`
		Subtype string `json:"subtype"`
		Result  string `json:"result"`
		Session string `json:"session_id"`
	}
	jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("claudecode: turn aborted: %w", ctx.Err())
	case jerr == nil && res.IsError:
		return &TurnError{Subtype: res.Subtype, Result: res.Result}
	case err != nil:
		return fmt.Errorf("claudecode: claude -p: %w: %s", err, proc.Head(stderr.String()+stdout.String()))
	case jerr != nil:
		return fmt.Errorf("claudecode: claude -p printed no JSON result: %w: %s", jerr, proc.Head(stdout.String()))
	case res.Session != "" && res.Session != s.ID:
		return fmt.Errorf("claudecode: claude ran session %s, want %s", res.Session, s.ID)
	}
	return nil
}
