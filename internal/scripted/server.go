package scripted

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
)

// maxBody bounds what the server reads of one request.
const maxBody = 64 << 20

// Answer sources recorded in Recorded.Rule when no rule answered.
const (
	AnsweredByDefault = -1 // the script's default reply
	AnsweredByQueue   = -2 // a reply queued with Enqueue
	NotAnswered       = -3 // not a model call, or a body that is not JSON
	AnsweredEmpty     = -4 // a Responses call with generate false, answered with no output
)

// Recorded is one request as the server received it: an HTTP request, or
// one frame of a WebSocket, with its handshake's method, path and headers.
type Recorded struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte // exactly as received
	// Full is the call as the rules read it: Body, except for a WebSocket
	// frame that continues its connection's last response
	// (previous_response_id), whose input the connection's history leads.
	Full    []byte
	Frame   bool   // a WebSocket frame
	Session string // x-session-id
	Kind    string // agent, title, compaction, subagent, prewarm, remote-compaction; empty when not a model call
	Rule    int    // index of the rule that answered, or one of the Answered*/NotAnswered constants
}

// Server is the scripted model; an http.Handler safe for concurrent use.
type Server struct {
	script Script

	mu       sync.Mutex
	used     []int              // per rule, calls answered
	queues   map[string][]Reply // per session; "" serves any session
	requests []Recorded
	calls    int // chat calls answered, for ids
}

// New returns a server answering from script. It panics when the script is
// invalid (see Script.Validate): a script built in Go is the caller's code;
// LoadScript validates scripts that come from outside.
func New(script Script) *Server {
	if err := script.Validate(); err != nil {
		panic(err)
	}
	s := &Server{script: script}
	s.reset()
	return s
}

// Enqueue queues replies for calls of session (the x-session-id header); the
// empty session serves calls of any session once the session's own queue is
// empty. Queued replies are served before the rules, except to title calls.
func (s *Server) Enqueue(session string, replies ...Reply) {
	for _, r := range replies {
		if err := r.validate(); err != nil {
			panic(fmt.Errorf("scripted: Enqueue: %w", err))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues[session] = append(s.queues[session], replies...)
}

// Pending returns how many queued replies of session are not yet served.
func (s *Server) Pending(session string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queues[session])
}

// Requests returns every request received since New or Reset, in order.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Session returns the requests whose x-session-id is id, in order.
func (s *Server) Session(id string) []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Recorded
	for _, r := range s.requests {
		if r.Session == id {
			out = append(out, r)
		}
	}
	return out
}

// Take returns the requests whose x-session-id is id, in order, and forgets
// them. A long-running user (rcm bench replay sends tens of thousands of
// large bodies) takes each session's requests as it goes, so the server does
// not hold every body it ever received.
func (s *Server) Take(id string) []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Recorded
	kept := s.requests[:0]
	for _, r := range s.requests {
		if r.Session == id {
			out = append(out, r)
		} else {
			kept = append(kept, r)
		}
	}
	clear(s.requests[len(kept):])
	s.requests = kept
	return out
}

// Reset forgets recorded requests and queued replies and restores every
// rule's Times, as if the server were new.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

func (s *Server) reset() {
	s.used = make([]int, len(s.script.Rules))
	s.queues = map[string][]Reply{}
	s.requests = nil
	s.calls = 0
}

// Serve answers on ln until ctx is done, then shuts down, letting requests in
// flight finish for up to five seconds (hanging replies end when the
// connections close).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			hs.Close()
		}
	}()
	err := hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-done
		return nil
	}
	return err
}

// ServeHTTP records the request and answers it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	rec := Recorded{
		Method:  r.Method,
		Path:    r.URL.Path,
		Query:   r.URL.RawQuery,
		Header:  r.Header.Clone(),
		Body:    body,
		Full:    body,
		Session: r.Header.Get(headerSession),
		Rule:    NotAnswered,
	}
	switch path := r.URL.Path; {
	case err != nil:
		s.record(rec)
		writeError(w, http.StatusBadRequest, fmt.Sprintf("reading the body: %v", err))
	case len(body) > maxBody:
		s.record(rec)
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", maxBody))
	case strings.HasSuffix(path, "/responses") && websocket.IsWebSocketUpgrade(r):
		s.socket(w, r, rec)
	case strings.HasSuffix(path, "/messages/count_tokens"):
		s.record(rec)
		// Claude Code counts tokens now and then; an estimate, as usage's.
		writeJSON(w, http.StatusOK, map[string]int{"input_tokens": (len(body) + 3) / 4})
	case strings.HasSuffix(path, "/chat/completions"), strings.HasSuffix(path, "/messages"), strings.HasSuffix(path, "/responses"):
		s.chat(w, r, rec)
	case strings.HasSuffix(r.URL.Path, "/models"):
		s.record(rec)
		s.models(w, r)
	default:
		s.record(rec)
		writeError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
	}
}

func (s *Server) record(rec Recorded) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, rec Recorded) {
	if r.Method != http.MethodPost {
		s.record(rec)
		writeError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	if !gjson.ValidBytes(rec.Body) {
		s.record(rec)
		writeError(w, http.StatusBadRequest, "body is not valid JSON")
		return
	}
	api := wireOf(r.URL.Path)
	c := readCall(api, rec.Body, r.Header)
	out, err := s.complete(api, c, &rec)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if !sleep(r.Context(), out.reply.Delay) {
		return
	}
	if out.reply.failed() {
		writeBody(w, out.reply.Status, out.reply.errorBody())
		return
	}
	var done bool
	switch {
	case api == wireMessages:
		// Anthropic's Messages API: the same replies, in its stream (the
		// bench and Claude Code always stream).
		done = out.messagesStream(r.Context(), out.events(r.Context(), w))
	case api == wireResponses:
		// The Responses API: the same replies as output items, streamed.
		done = out.responsesStream(r.Context(), out.events(r.Context(), w))
	case c.stream:
		done = out.stream(r.Context(), w, c.includeUsage)
	default:
		out.json(r.Context(), w)
		return
	}
	if done {
		sleep(r.Context(), s.script.Hold)
	}
}

// complete chooses the answer to a call on api and records the call.
func (s *Server) complete(api wire, c Call, rec *Recorded) (*completion, error) {
	rec.Kind = c.Kind
	reply, id, err := s.choose(c, rec)
	if err != nil {
		return nil, err
	}
	reply = reply.expand(c)
	for _, tc := range reply.ToolCalls {
		if tc.Custom && api != wireResponses {
			return nil, fmt.Errorf("custom tool call %s: only the Responses API carries custom tool calls", tc.Name)
		}
	}
	return &completion{
		id:      fmt.Sprintf("chatcmpl-scripted-%d", id),
		model:   s.model(c.model),
		created: time.Now().Unix(),
		reply:   reply,
		usage:   usage(reply, len(rec.Full)),
		callID:  id,
		empty:   c.quiet,
	}, nil
}

// choose picks the reply for a call and records the request with its source,
// both under one lock so that Requests order matches answer order.
func (s *Server) choose(c Call, rec *Recorded) (Reply, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	defer func() { s.requests = append(s.requests, *rec) }()
	if c.quiet {
		rec.Rule = AnsweredEmpty
		return Reply{}, s.calls, nil
	}
	if c.Kind != transcript.Title.String() {
		for _, q := range []string{c.Session, ""} {
			if replies := s.queues[q]; len(replies) > 0 {
				s.queues[q] = replies[1:]
				rec.Rule = AnsweredByQueue
				return replies[0], s.calls, nil
			}
		}
	}
	for i, rule := range s.script.Rules {
		if (rule.Times != 0 && s.used[i] >= rule.Times) || !rule.When.matches(c) {
			continue
		}
		reply := rule.Reply
		if rule.Answer != nil {
			var ok bool
			if reply, ok = rule.Answer(c); !ok {
				continue
			}
			if err := reply.validate(); err != nil {
				rec.Rule = i
				return Reply{}, 0, fmt.Errorf("rule %d: answer: %w", i, err)
			}
		}
		s.used[i]++
		rec.Rule = i
		return reply, s.calls, nil
	}
	rec.Rule = AnsweredByDefault
	return s.script.Default, s.calls, nil
}

// model names the model in responses: the requested one, else the
// script's first, else "scripted".
func (s *Server) model(requested string) string {
	switch {
	case requested != "":
		return requested
	case len(s.script.Models) > 0:
		return s.script.Models[0]
	}
	return "scripted"
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, "use GET")
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, id := range s.script.Models {
		list.Data = append(list.Data, model{ID: id, Object: "model", OwnedBy: "scripted"})
	}
	writeJSON(w, http.StatusOK, list)
}

// sleep waits d or until ctx is done; it reports whether the wait completed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
