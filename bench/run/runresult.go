package run

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/rcm-dev/rcm/bench/stat"
)

// Conditions of a real run: the focus task's schedule.
const (
	ConditionBase   = "base"   // S_base: the focus task uninterrupted
	ConditionSwitch = "switch" // S_switch: interleaved with four distractors
)

// RunsFile is the JSONL file `rcm bench run` appends a Result to as each
// run finishes, and `rcm bench report` reads.
const RunsFile = "runs.jsonl"

// Result is one line of RunsFile: a focus task's schedule run once by a
// real harness in one mode (at one threshold; none for native), scored.
type Result struct {
	Key       string `json:"key"`
	Session   string `json:"session"`
	Task      string `json:"task"`
	Kind      string `json:"kind"`
	Condition string `json:"condition"`
	Mode      string `json:"mode"`
	// Threshold is X-RCM-Threshold; null for native, which does not route.
	Threshold stat.Num `json:"threshold"`
	Repeat    int      `json:"repeat"`
	Harness   string   `json:"harness"`
	Model     string   `json:"model"`
	// Commit is the base commit the checkouts were made at.
	Commit string `json:"commit"`

	Score

	// Requests of the focus task: posted, answered (the turn ended within
	// its budget and continuations, without a harness error), and the
	// continuations and errors along the way.
	Requests      int `json:"requests"`
	Answered      int `json:"answered"`
	Continuations int `json:"continuations"`
	Timeouts      int `json:"timeouts"` // requests still unfinished after every continuation
	TurnErrors    int `json:"turn_errors"`

	Distractors []DistractorResult `json:"distractors,omitempty"`

	Usage

	Seconds  float64   `json:"seconds"`
	Started  time.Time `json:"started"`
	HarnessS string    `json:"harness_session"`
}

// Score is how the focus checkout's final patch fared.
type Score struct {
	// Resolved: the patch applied to a clean checkout and every listed
	// test (FAIL_TO_PASS and PASS_TO_PASS) passed.
	Resolved   bool      `json:"resolved"`
	Applied    bool      `json:"applied"`
	PatchBytes int       `json:"patch_bytes"`
	FailToPass TestTally `json:"fail_to_pass"`
	PassToPass TestTally `json:"pass_to_pass"`
	// Failed lists the listed tests that did not pass (failed, errored or
	// not found in the output).
	Failed []string `json:"failed,omitempty"`
	// Stripped lists the files the test patch sets whose changes were left
	// out of the patch before it was applied.
	Stripped []string `json:"stripped_files,omitempty"`
	// ExitCode of the test command (-1 when it did not run).
	ExitCode int `json:"exit_code"`
	// Problem says why the verifier could not judge (patch did not apply,
	// the test command timed out), empty otherwise.
	Problem string `json:"problem,omitempty"`
}

// TestTally counts the listed tests that passed.
type TestTally struct {
	Passed int `json:"passed"`
	Total  int `json:"total"`
}

// DistractorResult is a distractor's completion in S_switch.
type DistractorResult struct {
	Task     string `json:"task"`
	Requests int    `json:"requests"`
	Answered int    `json:"answered"`
	// Changed: its checkout differs from the base commit at the end.
	Changed bool `json:"changed"`
}

// Usage is the proxy's accounting of a harness session's model calls.
type Usage struct {
	Calls int `json:"calls"`
	// Errors are calls answered with a status other than 200.
	Errors int `json:"call_errors"`
	// SentTokens and ForwardedTokens are the proxy's estimates
	// (X-RCM-Tokens-In, X-RCM-Tokens-Out): what the harness sent, and
	// what reached the model.
	SentTokens      int `json:"sent_tokens"`
	ForwardedTokens int `json:"forwarded_tokens"`
	// The upstream's own usage, summed over the calls that reported it
	// (UsageCalls of Calls): prompt tokens (cached included), cached
	// prompt tokens (prompt_tokens_details.cached_tokens) and completion
	// tokens.
	UsageCalls       int `json:"usage_calls"`
	PromptTokens     int `json:"prompt_tokens"`
	CachedTokens     int `json:"cached_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Add sums u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		Calls: u.Calls + v.Calls, Errors: u.Errors + v.Errors,
		SentTokens: u.SentTokens + v.SentTokens, ForwardedTokens: u.ForwardedTokens + v.ForwardedTokens,
		UsageCalls: u.UsageCalls + v.UsageCalls, PromptTokens: u.PromptTokens + v.PromptTokens,
		CachedTokens: u.CachedTokens + v.CachedTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens,
	}
}

// Key names a run: session, condition, mode, threshold (- for none) and
// repeat. It is what a resumed run skips on.
func Key(session, condition, mode string, threshold float64, repeat int) string {
	t := "-"
	if !math.IsNaN(threshold) {
		t = strconv.FormatFloat(threshold, 'f', -1, 64)
	}
	return fmt.Sprintf("%s|%s|%s|%s|%d", session, condition, mode, t, repeat)
}

// ReadRuns reads a RunsFile. A last line cut short (the process died while
// writing it) is ignored; any other bad line is an error naming it.
func ReadRuns(path string) ([]Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return parseRuns(b, path)
}

func parseRuns(b []byte, name string) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var r Result
		if err := json.Unmarshal(raw, &r); err != nil || r.Key == "" {
			if !bytes.HasSuffix(b, []byte("\n")) && isLastLine(b, line) {
				break // cut short
			}
			if err == nil {
				err = errors.New("no key")
			}
			return out, fmt.Errorf("bench: %s:%d: %w", name, line, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("bench: %s: %w", name, err)
	}
	return out, nil
}

// isLastLine reports whether line (1-based) is the last line of b.
func isLastLine(b []byte, line int) bool {
	return bytes.Count(bytes.TrimRight(b, "\n"), []byte("\n"))+1 == line
}

// runLog appends Results to a RunsFile, one whole line per write.
type runLog struct {
	f *os.File
}

// openRunLog opens path for appending, first cutting a last line left
// unfinished by a crash, so that the next line starts clean.
func openRunLog(path string) (*runLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	b, err := io.ReadAll(f)
	if err == nil && len(b) > 0 && b[len(b)-1] != '\n' {
		err = f.Truncate(int64(bytes.LastIndexByte(b, '\n') + 1))
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekEnd)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	return &runLog{f: f}, nil
}

func (l *runLog) append(r *Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return l.f.Sync()
}

func (l *runLog) close() error { return l.f.Close() }
