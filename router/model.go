package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rcm-dev/rcm/internal/str"
	openai "github.com/sashabaranov/go-openai"
)

// ModelUsage is what the classifier cost on one call, reported apart from
// the agent's own usage.
type ModelUsage struct {
	Calls            int
	Errors           int           // timeouts, HTTP errors and bad answers
	Latency          time.Duration // summed over calls
	PromptTokens     int
	CompletionTokens int
	LastError        string // of the last failed call, for the inspector
}

// classifier asks an OpenAI-compatible chat model which task a request
// belongs to.
type classifier struct {
	client  *openai.Client
	model   string
	timeout time.Duration
}

func newClassifier(cfg Config) *classifier {
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	return &classifier{client: openai.NewClientWithConfig(oc), model: cfg.Model, timeout: cfg.Timeout}
}

const classifierPrompt = `You route the requests of a coding agent's session to tasks. ` +
	`The session holds the tasks listed below; each shows its first request (what it asks for), its ` +
	`latest one, the checkouts it works in and the files its tool calls touched. Decide which task the new request continues, or "new" if it starts a ` +
	`task of its own. Answer with one JSON object only: {"task": "<task id or new>", "confidence": ` +
	`<probability in [0,1] that your answer is right>}.`

// Bytes of request text shown to the classifier.
const (
	promptFirstCap   = 600
	promptLatestCap  = 300
	promptCurrentCap = 2000
	promptFiles      = 12 // files listed per task
)

// ask returns the classifier's decision for turn i, or cheap unchanged when
// the classifier fails or answers nonsense.
func (c *classifier) ask(ctx context.Context, s *call, i int, cheap Decision, u *ModelUsage) Decision {
	prompt := s.describe(i)
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	resp, err := c.client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model: c.model,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: classifierPrompt},
			{Role: openai.ChatMessageRoleUser, Content: prompt},
		},
		Temperature:    0,
		MaxTokens:      64,
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
	})
	u.Calls++
	u.Latency += time.Since(start)
	if err == nil {
		u.PromptTokens += resp.Usage.PromptTokens
		u.CompletionTokens += resp.Usage.CompletionTokens
		var d Decision
		if d, err = s.answer(resp); err == nil {
			return d
		}
	}
	u.Errors++
	u.LastError = err.Error()
	return cheap
}

var errAnswer = errors.New("router: classifier answer")

// answer reads the classifier's JSON answer.
func (s *call) answer(resp openai.ChatCompletionResponse) (Decision, error) {
	if len(resp.Choices) == 0 {
		return Decision{}, fmt.Errorf("%w: no choices", errAnswer)
	}
	text := strings.TrimSpace(resp.Choices[0].Message.Content)
	text = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(text, "```json"), "```"), "```")
	var a struct {
		Task       string   `json:"task"`
		Confidence *float64 `json:"confidence"`
	}
	if err := json.Unmarshal([]byte(text), &a); err != nil {
		return Decision{}, fmt.Errorf("%w: %w", errAnswer, err)
	}
	if a.Confidence == nil || math.IsNaN(*a.Confidence) || *a.Confidence < 0 || *a.Confidence > 1 {
		return Decision{}, fmt.Errorf("%w: confidence missing or outside [0,1]", errAnswer)
	}
	task := strings.TrimSpace(a.Task)
	switch {
	case strings.EqualFold(task, "new"):
		task = s.newID()
	case !s.known(task):
		return Decision{}, fmt.Errorf("%w: unknown task %q", errAnswer, a.Task)
	}
	return one(task, *a.Confidence, MethodModel), nil
}

func (s *call) known(task string) bool {
	for _, t := range s.tasks {
		if t == task {
			return true
		}
	}
	return false
}

// describe writes the classifier's user prompt for turn i.
func (s *call) describe(i int) string {
	var b strings.Builder
	b.WriteString("Tasks:\n")
	for _, task := range s.tasks {
		turns := s.byTask[task]
		if len(turns) == 0 {
			continue
		}
		first, latest := turns[0], turns[len(turns)-1]
		var roots, files []string
		for _, j := range turns {
			sig := read(s.t, &s.f, s.t.Turns[j], requestCap, nil, nil)
			for _, set := range [][]string{sig.named, sig.workdirs, sig.touched} {
				for _, r := range set {
					roots = addRoot(roots, r)
				}
			}
			eachCall(s.t, s.t.Turns[j], func(args string) {
				for _, f := range filesIn(str.Clip(args, argumentCap), &s.f) {
					if len(files) < promptFiles {
						files = addRoot(files, f)
					}
				}
			})
		}
		fmt.Fprintf(&b, "- id %q\n  first request: %q\n", task, str.Clip(s.request(first), promptFirstCap))
		if latest != first {
			fmt.Fprintf(&b, "  latest request: %q\n", str.Clip(s.request(latest), promptLatestCap))
		}
		if len(roots) > 0 {
			fmt.Fprintf(&b, "  checkouts: %s\n", strings.Join(roots, ", "))
		}
		if len(files) > 0 {
			fmt.Fprintf(&b, "  files its tool calls touched: %s\n", strings.Join(files, ", "))
		}
	}
	fmt.Fprintf(&b, "\nNew request: %q\n", str.Clip(s.request(i), promptCurrentCap))
	return b.String()
}

func (s *call) request(i int) string { return asked(s.t, s.t.Turns[i]) }

// filesIn lists the file paths s names (a token with a file extension),
// relative to the working directory when absolute.
func filesIn(s string, f *frame) []string {
	var out []string
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool { return r >= 0x80 || !pathByte(byte(r)) }) {
		tok = strings.TrimRight(tok, ".-")
		base := tok[strings.LastIndexByte(tok, '/')+1:]
		if ext := strings.LastIndexByte(base, '.'); ext <= 0 || ext == len(base)-1 || !letter(base[ext+1]) || strings.HasPrefix(tok, "//") {
			continue
		}
		if tok[0] == '/' {
			_, tok = f.place(tok)
		}
		if tok != "" {
			out = append(out, tok)
		}
	}
	return out
}
