package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/rcm-dev/rcm/internal/proc"
)

// DefaultStartTimeout bounds Start when its context has no deadline.
const DefaultStartTimeout = 60 * time.Second

// Server is a running `opencode serve`, driven through its HTTP API.
type Server struct {
	// URL is the server's root, http://127.0.0.1:PORT.
	URL string

	cmd    *exec.Cmd
	out    *proc.Tail
	exited chan struct{} // closed when the process has been waited for
	err    error         // Wait's result, valid once exited is closed
	client *http.Client
	close  sync.Once
}

// Start runs `opencode serve` in dir with env (see Env) on 127.0.0.1:port
// (a free port when port is 0) and returns once it answers. ctx bounds the
// start-up only (DefaultStartTimeout when it has no deadline); the server
// runs until Close.
func Start(ctx context.Context, bin, dir string, env []string, port int) (*Server, error) {
	if port == 0 {
		p, err := proc.FreePort()
		if err != nil {
			return nil, fmt.Errorf("opencode: %w", err)
		}
		port = p
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	cmd := exec.Command(bin, "serve", "--hostname", "127.0.0.1", "--port", strconv.Itoa(port))
	cmd.Dir, cmd.Env = dir, env
	s := &Server{
		URL:    "http://127.0.0.1:" + strconv.Itoa(port),
		cmd:    cmd,
		out:    &proc.Tail{Max: 64 << 10},
		exited: make(chan struct{}),
		// No overall timeout: a prompt lasts as long as the turn; each
		// call's context bounds it.
		client: &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}},
	}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.WaitDelay = waitDelay
	proc.Group(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("opencode: start serve: %w", err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	if err := s.ready(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("opencode: serve on port %d not ready: %w; output: %s", port, err, tail(s.Output(), 800))
	}
	return s, nil
}

// ready polls GET /global/health, a cheap route (the first GET /doc after
// start-up was seen to hang), until it answers healthy.
func (s *Server) ready(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var h struct {
			Healthy bool `json:"healthy"`
		}
		err := s.call(pctx, http.MethodGet, "/global/health", nil, nil, &h)
		cancel()
		if err == nil && h.Healthy {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("process exited: %v", s.err)
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Close stops the server and everything it started: SIGTERM to its process
// group, SIGKILL after five seconds. It is safe to call more than once.
func (s *Server) Close() {
	s.close.Do(func() {
		proc.Terminate(s.cmd)
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
		}
		proc.Kill(s.cmd) // stragglers of the group, or the server itself
		<-s.exited
		s.client.CloseIdleConnections()
	})
}

// Output returns the end of the server's standard output and error.
func (s *Server) Output() string { return s.out.String() }

// Session is an OpenCode session.
type Session struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Directory string `json:"directory"`
}

// CreateSession starts a session working in dir. An empty title lets
// OpenCode generate one from the first prompt (its title side call).
func (s *Server) CreateSession(ctx context.Context, dir, title string) (Session, error) {
	body := map[string]string{}
	if title != "" {
		body["title"] = title
	}
	var out Session
	err := s.call(ctx, http.MethodPost, "/session", url.Values{"directory": {dir}}, body, &out)
	if err == nil && out.ID == "" {
		err = errors.New("no session id in the answer")
	}
	if err != nil {
		return Session{}, fmt.Errorf("opencode: create session in %s: %w", dir, err)
	}
	return out, nil
}

// GetSession returns the session's current state (its generated title, say).
func (s *Server) GetSession(ctx context.Context, session, dir string) (Session, error) {
	var out Session
	if err := s.call(ctx, http.MethodGet, "/session/"+url.PathEscape(session), dirQuery(dir), nil, &out); err != nil {
		return Session{}, fmt.Errorf("opencode: get session %s: %w", session, err)
	}
	return out, nil
}

// Message is one message of a session: what OpenCode stores, reduced to
// the fields rcm reads.
type Message struct {
	Info  Info   `json:"info"`
	Parts []Part `json:"parts"`
}

// Info describes a message.
type Info struct {
	ID         string `json:"id"`
	SessionID  string `json:"sessionID"`
	Role       string `json:"role"` // user or assistant
	ProviderID string `json:"providerID"`
	ModelID    string `json:"modelID"`
	Finish     string `json:"finish"`
	Agent      string `json:"agent"` // build, plan, compaction (a summary), ...
	// Error is set when the turn failed (the model API answered an error,
	// say).
	Error  *Failure `json:"error,omitempty"`
	Tokens struct {
		Input  int `json:"input"`
		Output int `json:"output"`
		Cache  struct {
			Read  int `json:"read"`
			Write int `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
}

// Failure is why OpenCode ended a turn: {"name": "APIError", "data":
// {"message": ..., "statusCode": 400, ...}}.
type Failure struct {
	Name string `json:"name"`
	Data struct {
		Message    string `json:"message"`
		StatusCode int    `json:"statusCode"`
	} `json:"data"`
}

func (f *Failure) String() string {
	s := f.Name + ": " + f.Data.Message
	if f.Data.StatusCode != 0 {
		s += fmt.Sprintf(" (status %d)", f.Data.StatusCode)
	}
	return s
}

// Part is one piece of a message: text, a tool call with its state, ...
type Part struct {
	ID     string     `json:"id"`
	Type   string     `json:"type"` // text, tool, step-start, step-finish, ...
	Text   string     `json:"text"`
	Tool   string     `json:"tool"`
	CallID string     `json:"callID"`
	State  *ToolState `json:"state,omitempty"`
}

// ToolState is a tool call's progress and result.
type ToolState struct {
	Status string          `json:"status"` // pending, running, completed, error
	Input  json.RawMessage `json:"input"`
	Output string          `json:"output"`
	Error  string          `json:"error"`
}

// Text returns the message's text parts, joined.
func (m Message) Text() string {
	var b bytes.Buffer
	for _, p := range m.Parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Tools returns the message's tool parts.
func (m Message) Tools() []Part {
	var out []Part
	for _, p := range m.Parts {
		if p.Type == "tool" {
			out = append(out, p)
		}
	}
	return out
}

// TurnError is a turn that OpenCode ended with an error of its own (the
// model API failed, the model is unknown, ...).
type TurnError struct {
	Message Message
}

func (e *TurnError) Error() string {
	return "opencode: turn failed: " + e.Message.Info.Error.String()
}

// Prompt sends text as the user's next message, with provider/model, and
// blocks until the turn ends (the model has stopped calling tools). It
// returns the last assistant message. A turn OpenCode ended with an error
// returns that message and a *TurnError. When ctx ends first, the turn is
// aborted, so that the session is ready for the next prompt.
func (s *Server) Prompt(ctx context.Context, session, dir, provider, model, text string) (Message, error) {
	body := map[string]any{
		"model": map[string]string{"providerID": provider, "modelID": model},
		"parts": []map[string]string{{"type": "text", "text": text}},
	}
	var out Message
	err := s.call(ctx, http.MethodPost, "/session/"+url.PathEscape(session)+"/message", dirQuery(dir), body, &out)
	if err != nil {
		if ctx.Err() != nil {
			s.abort(session, dir)
		}
		return Message{}, fmt.Errorf("opencode: prompt session %s: %w", session, err)
	}
	if out.Info.Error != nil {
		return out, &TurnError{out}
	}
	return out, nil
}

// abort stops the session's running turn; it runs after the caller's
// context has ended, so it has its own short deadline.
func (s *Server) abort(session, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Abort(ctx, session, dir)
}

// Abort stops the session's running turn, if any.
func (s *Server) Abort(ctx context.Context, session, dir string) error {
	if err := s.call(ctx, http.MethodPost, "/session/"+url.PathEscape(session)+"/abort", dirQuery(dir), nil, nil); err != nil {
		return fmt.Errorf("opencode: abort session %s: %w", session, err)
	}
	return nil
}

// Messages returns the session's messages, oldest first.
func (s *Server) Messages(ctx context.Context, session, dir string) ([]Message, error) {
	var out []Message
	if err := s.call(ctx, http.MethodGet, "/session/"+url.PathEscape(session)+"/message", dirQuery(dir), nil, &out); err != nil {
		return nil, fmt.Errorf("opencode: messages of session %s: %w", session, err)
	}
	return out, nil
}

// Summarize compacts the session with provider/model (OpenCode's
// compaction call) and blocks until the summary is written.
func (s *Server) Summarize(ctx context.Context, session, dir, provider, model string) error {
	body := map[string]string{"providerID": provider, "modelID": model}
	if err := s.call(ctx, http.MethodPost, "/session/"+url.PathEscape(session)+"/summarize", dirQuery(dir), body, nil); err != nil {
		return fmt.Errorf("opencode: summarize session %s: %w", session, err)
	}
	return nil
}

func dirQuery(dir string) url.Values {
	if dir == "" {
		return nil
	}
	return url.Values{"directory": {dir}}
}

// maxAnswer bounds what is read of one API answer.
const maxAnswer = 64 << 20

// call sends in (JSON, when not nil) and decodes the answer into out (when
// not nil). A status other than 2xx is an error carrying the answer's start.
func (s *Server) call(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	u := s.URL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, tail(string(raw), 800))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w: %s", method, path, err, tail(string(raw), 200))
	}
	return nil
}
