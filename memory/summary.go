package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rcm-dev/rcm/internal/str"
	openai "github.com/sashabaranov/go-openai"
)

// Limits of the summary exchange.
const (
	defaultSummaryTimeout = 30 * time.Second
	maxSummaryRecent      = 8 << 10 // bytes of recent conversation sent
	maxSummaryTokens      = 400     // tokens the model may answer
	maxSummary            = 2 << 10 // bytes of the answer kept
	summaryRecordTokens   = 2000    // tokens of the rendered record sent
)

const summaryPrompt = `You maintain the state record of ONE coding task for an agent that works on several tasks in one session. ` +
	`From the task's record and its latest messages, state tersely what is done and what is still unfinished for this task only. ` +
	`Answer in plain text: a line "Progress:" with at most 4 short items, then a line "Unfinished:" with at most 6 short items (or "none"). ` +
	`No preamble, no advice, nothing about other tasks.`

// Summarizer asks a model, through an OpenAI-compatible chat-completions
// endpoint, for a terse progress and unfinished-items summary of a task (the
// optional --memory-model). It is used after a turn, off the request path;
// the caller stores the answer in Record.Summary and, on an error, keeps the
// deterministic record as it is.
type Summarizer struct {
	Model   string // model id; required
	BaseURL string // API root, e.g. https://api.openai.com/v1; "" means that one
	APIKey  string
	// Timeout bounds one summary request; 0 means 30s.
	Timeout time.Duration
}

// Validate reports a configuration that cannot work.
func (s *Summarizer) Validate() error {
	if s.Model == "" {
		// A base URL or key alone would be ignored without a word.
		return errors.New("memory: summarizer: no model (a base URL or key is used only with one)")
	}
	if s.Timeout < 0 {
		return fmt.Errorf("memory: summarizer: negative timeout %v", s.Timeout)
	}
	if s.BaseURL != "" {
		if err := str.HTTPURL(s.BaseURL); err != nil {
			return fmt.Errorf("memory: summarizer: base URL %q: %w", s.BaseURL, err)
		}
	}
	return nil
}

// Summarize returns the model's summary of r's progress and unfinished
// items, given the rendered record and recent, the task's latest
// conversation as text (cut to its last 8 KiB). The answer is trimmed and
// at most 2 KiB. An empty answer is an error.
func (s *Summarizer) Summarize(ctx context.Context, r Record, recent string) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	timeout := s.Timeout
	if timeout == 0 {
		timeout = defaultSummaryTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cfg := openai.DefaultConfig(s.APIKey)
	if s.BaseURL != "" {
		cfg.BaseURL = strings.TrimSuffix(s.BaseURL, "/")
	}
	if n := len(recent) - maxSummaryRecent; n > 0 {
		for n < len(recent) && !utf8.RuneStart(recent[n]) {
			n++
		}
		recent = recent[n:]
	}
	r.Summary = "" // the model writes the summary afresh, not from the old one
	user := "Task record:\n" + Render(r, summaryRecordTokens) + "\nLatest messages of the task:\n" + recent
	resp, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model:       s.Model,
		Temperature: 0,
		MaxTokens:   maxSummaryTokens,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: summaryPrompt},
			{Role: openai.ChatMessageRoleUser, Content: user},
		},
	})
	if err != nil {
		return "", fmt.Errorf("memory: summarize task %s: %w", r.Task, err)
	}
	if len(resp.Choices) == 0 {
		return "", fmt.Errorf("memory: summarize task %s: answer has no choices", r.Task)
	}
	out := strings.TrimSpace(resp.Choices[0].Message.Content)
	if out == "" {
		return "", fmt.Errorf("memory: summarize task %s: empty answer", r.Task)
	}
	return clip(out, maxSummary), nil
}
