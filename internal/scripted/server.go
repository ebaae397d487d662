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

	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
)

// maxBody bounds what the server reads of one request.
const maxBody = 64 << 20

// Answer sources recorded in Recorded.Rule when no rule answered.
const (
	AnsweredByDefault = -1 // the script's default reply
	AnsweredByQueue   = -2 // a reply queued with Enqueue
	NotAnswered       = -3 // not a chat call, or a body that is not JSON
)

// Recorded is one request as the server received it.
type Recorded struct {
	Method  string
	Path    string
	Query   string
	Header  http.Header
	Body    []byte // exactly as received
	Session string // x-session-id
	Kind    string // agent, title, compaction, subagent; empty when not a chat call
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
		Session: r.Header.Get(headerSession),
		Rule:    NotAnswered,
	}
	switch {
	case err != nil:
		s.record(rec)
		writeError(w, http.StatusBadRequest, fmt.Sprintf("reading the body: %v", err))
	case len(body) > maxBody:
		s.record(rec)
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", maxBody))
	case strings.HasSuffix(r.URL.Path, "/chat/completions"), strings.HasSuffix(r.URL.Path, "/messages"), strings.HasSuffix(r.URL.Path, "/responses"):
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
	c := readCall(rec.Body, r.Header)
	rec.Kind = c.kind
	reply, id := s.choose(c, &rec)
	reply = reply.expand(c)
	if !sleep(r.Context(), reply.Delay) {
		return
	}
	if reply.failed() {
		writeErrorReply(w, reply)
		return
	}
	out := completion{
		id:      fmt.Sprintf("chatcmpl-scripted-%d", id),
		model:   s.model(c.model),
		created: time.Now().Unix(),
		reply:   reply,
		usage:   usage(reply, len(rec.Body)),
		callID:  id,
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/messages"):
		// Anthropic's Messages API: the same bodies' kinds and the same
		// replies, in its stream (the bench always streams).
		out.messagesStream(r.Context(), w)
		return
	case strings.HasSuffix(r.URL.Path, "/responses"):
		// The Responses API: the same replies as output items, streamed.
		out.responsesStream(r.Context(), w)
		return
	case c.stream:
		out.stream(r.Context(), w, c.includeUsage)
		return
	}
	out.json(r.Context(), w)
}

// choose picks the reply for a call and records the request with its source,
// both under one lock so that Requests order matches answer order.
func (s *Server) choose(c call, rec *Recorded) (Reply, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	defer func() { s.requests = append(s.requests, *rec) }()
	if c.kind != transcript.Title.String() {
		for _, q := range []string{c.session, ""} {
			if replies := s.queues[q]; len(replies) > 0 {
				s.queues[q] = replies[1:]
				rec.Rule = AnsweredByQueue
				return replies[0], s.calls
			}
		}
	}
	for i, rule := range s.script.Rules {
		if (rule.Times == 0 || s.used[i] < rule.Times) && rule.When.matches(c) {
			s.used[i]++
			rec.Rule = i
			return rule.Reply, s.calls
		}
	}
	rec.Rule = AnsweredByDefault
	return s.script.Default, s.calls
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
