package run

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// Meter wraps the proxy's handler and keeps each harness session's
// accounting (Usage) of its chat-completions, Messages and Responses calls,
// keyed by the x-session-id header OpenCode sends on every call (Claude
// Code's X-Claude-Code-Session-Id, Codex's session-id): the proxy's token
// estimates from its X-RCM-Tokens-In/Out response headers, and the
// upstream's usage read from the answer (the streamed usage chunk,
// Anthropic's message_start and message_delta events, the Responses API's
// response.completed, or the JSON body's usage). Answers pass through
// unchanged and unbuffered.
type Meter struct {
	next http.Handler

	mu         sync.Mutex
	idle       *sync.Cond // signalled when a call ends; L is &mu
	sessions   map[string]Usage
	thresholds map[string]string // X-RCM-Threshold as last sent, per session
	busy       map[string]int    // calls under way, per session
}

// NewMeter returns a Meter in front of next.
func NewMeter(next http.Handler) *Meter {
	m := &Meter{next: next, sessions: map[string]Usage{}, thresholds: map[string]string{}, busy: map[string]int{}}
	m.idle = sync.NewCond(&m.mu)
	return m
}

// Threshold returns the X-RCM-Threshold header of session's last call, so
// that a run can check its harness really sent its arm's threshold.
func (m *Meter) Threshold(session string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.thresholds[session]
}

// Usage returns what session's calls have used so far, once its calls
// under way have ended: a client may end its turn (Codex exits) as soon as
// it has read an answer's last event, before the proxy's handler returns
// and the call is counted. A call ends at the latest when its client goes
// away, which cancels it in the proxy.
func (m *Meter) Usage(session string) Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.busy[session] > 0 {
		m.idle.Wait()
	}
	return m.sessions[session]
}

func (m *Meter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("X-Session-Id")
	if sid == "" {
		sid = r.Header.Get("X-Claude-Code-Session-Id")
	}
	if sid == "" {
		sid = r.Header.Get("Session-Id") // Codex
	}
	responses := strings.HasSuffix(r.URL.Path, "/responses")
	call := strings.HasSuffix(r.URL.Path, "/chat/completions") || strings.HasSuffix(r.URL.Path, "/messages") || responses
	if sid == "" || r.Method != http.MethodPost || !call {
		m.next.ServeHTTP(w, r)
		return
	}
	m.mu.Lock()
	m.busy[sid]++
	m.mu.Unlock()
	mw := &meterWriter{ResponseWriter: w}
	// Counted even when the proxy aborts the answer (it panics with
	// http.ErrAbortHandler when the client has gone, say).
	defer m.count(sid, r, mw)
	m.next.ServeHTTP(mw, r)
}

// count adds one call of session sid, answered as mw saw it, and ends it.
func (m *Meter) count(sid string, r *http.Request, mw *meterWriter) {
	u := Usage{Calls: 1}
	if mw.status != 0 && mw.status != http.StatusOK {
		u.Errors = 1
	}
	u.SentTokens = headerInt(mw.header, "X-RCM-Tokens-In")
	u.ForwardedTokens = headerInt(mw.header, "X-RCM-Tokens-Out")
	if mw.usage.seen {
		u.UsageCalls = 1
		u.PromptTokens, u.CachedTokens, u.CompletionTokens = mw.usage.prompt, mw.usage.cached, mw.usage.completion
	}
	m.mu.Lock()
	m.sessions[sid] = m.sessions[sid].Add(u)
	m.thresholds[sid] = r.Header.Get("X-RCM-Threshold")
	if m.busy[sid]--; m.busy[sid] == 0 {
		delete(m.busy, sid)
	}
	m.idle.Broadcast()
	m.mu.Unlock()
}

func headerInt(h http.Header, name string) int {
	n, _ := strconv.Atoi(h.Get(name))
	return n
}

// meterWriter notes the status and headers as sent, and scans the answer
// for a usage object: line by line in an event stream (only the current
// line is held), whole (up to maxMetered bytes) otherwise.
type meterWriter struct {
	http.ResponseWriter
	status int
	header http.Header
	line   []byte
	body   []byte
	sse    bool
	usage  upstreamUsage
}

// upstreamUsage is what an answer's usage objects say: prompt tokens
// (cached included), the cached part of them, completion tokens.
type upstreamUsage struct {
	seen                       bool
	prompt, cached, completion int
}

// add reads one usage object: OpenAI chat completions' (prompt_tokens,
// prompt_tokens_details.cached_tokens), OpenAI responses' (input_tokens,
// input_tokens_details.cached_tokens) or Anthropic's, whose input_tokens
// leave out the cache reads (cache_read_input_tokens) and writes. An
// Anthropic stream splits its usage between message_start and
// message_delta, so each count keeps the largest value seen.
func (u *upstreamUsage) add(o gjson.Result) {
	n := func(path string) int { return int(o.Get(path).Int()) }
	prompt, cached, completion := n("prompt_tokens"), n("prompt_tokens_details.cached_tokens"), n("completion_tokens")
	if !o.Get("prompt_tokens").Exists() {
		cached = n("input_tokens_details.cached_tokens") + n("cache_read_input_tokens")
		prompt = n("input_tokens") + n("cache_read_input_tokens") + n("cache_creation_input_tokens")
		completion = n("output_tokens")
	}
	u.seen = true
	u.prompt, u.cached, u.completion = max(u.prompt, prompt), max(u.cached, cached), max(u.completion, completion)
}

// maxMetered bounds what is kept of a non-streamed answer or of one event line.
const maxMetered = 8 << 20

func (w *meterWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status, w.header = code, w.Header().Clone()
		w.sse = strings.HasPrefix(w.header.Get("Content-Type"), "text/event-stream")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *meterWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.sse {
		w.scan(p)
	} else if len(w.body)+len(p) <= maxMetered {
		w.body = append(w.body, p...)
		if u := gjson.GetBytes(w.body, "usage"); u.IsObject() {
			w.usage = upstreamUsage{}
			w.usage.add(u)
		}
	}
	return w.ResponseWriter.Write(p)
}

// scan feeds p to the line splitter; each complete "data:" line that holds
// a usage object (Anthropic's message_start: under "message"; Responses'
// response.completed: under "response") adds to it.
func (w *meterWriter) scan(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(w.line)+len(p) <= maxMetered {
				w.line = append(w.line, p...)
			}
			return
		}
		w.line = append(w.line, p[:i]...)
		p = p[i+1:]
		if data, ok := bytes.CutPrefix(bytes.TrimSpace(w.line), []byte("data:")); ok && bytes.Contains(data, []byte(`"usage"`)) {
			data = bytes.TrimSpace(data)
			for _, path := range []string{"usage", "message.usage", "response.usage"} {
				if u := gjson.GetBytes(data, path); u.IsObject() {
					w.usage.add(u)
				}
			}
		}
		w.line = w.line[:0]
	}
}

// Flush keeps the proxy's per-event flushes working through the wrapper.
func (w *meterWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *meterWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
