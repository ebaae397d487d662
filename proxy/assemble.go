package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/rcm-dev/rcm/compaction"
	"github.com/rcm-dev/rcm/inspector"
	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/router"
	"github.com/rcm-dev/rcm/transcript"
)

// maxObserved bounds the copy of a response kept for the memory observer; a
// longer response is observed truncated rather than held whole.
const maxObserved = 4 << 20

// assembly is one request's trip through the pipeline: what was received,
// what is forwarded and why.
type assembly struct {
	// prefix is the call's place in its session's chain of forwarded
	// contexts, taken once the answer is complete; it measures the
	// cached-prefix share of the forwarded messages (the inspector's figure).
	prefix     *prefixShare
	mode       Mode
	format     transcript.Format
	threshold  float64
	session    string
	client     string                 // the harness, as clientOf names it
	transcript *transcript.Transcript // nil when the body was not parsed
	invalid    bool                   // the body did not parse
	body       []byte                 // what goes upstream
	task       string
	confidence float64
	method     string
	routed     bool // a routing decision was made (task/confidence valid)
	fallback   string
	tokensIn   int
	tokensOut  int
	// kept lists the forwarded messages of a routed call (nil: all);
	// injected is the record message it added (rcm mode).
	kept     []int
	injected []byte

	// Routing state kept for the writes after the response.
	plan       *router.Plan
	fps        []transcript.Fingerprint
	prior      []router.Prior
	knownTasks []string
	at         time.Time

	// rcm mode: the record messages frozen for the call's turns (read with
	// the labels), those this call rendered, frozen where they were
	// placed after the response; the budget fit.
	frozen memory.Frozen
	freeze []memory.Freeze
	// record is the task's record, read once (taskRecord).
	record *taskRecord
	fit    compaction.Report
	// sections is a compaction call's summary split by task, worked out
	// once (summarySections).
	summary  sync.Once
	sections map[string]string

	// call is the call's place in its session's writes, and what it reads
	// of the earlier ones ahead of their commit (nil: not ordered).
	call *memory.Call

	resp     limitedBuffer
	sse      bool
	status   int
	complete bool // the whole answer reached the client
	latency  time.Duration
	clock    clock
	trace    *callTrace // nil when not traced
	// events receives a WebSocket answer's events as an event stream
	// (see tee); nil when nothing reads them.
	events io.Writer
}

// assemble builds the body to forward. It never fails: any internal error
// forwards the original body and says so (fallback "error").
func (h *Handler) assemble(r *http.Request, format transcript.Format, mode Mode, threshold float64, body []byte) *assembly {
	a := &assembly{mode: mode, format: format, threshold: threshold, body: body, fallback: FallbackNone, at: time.Now(), client: clientOf(r.Header)}
	a.tokensIn = compaction.Estimate(len(body))
	defer func() {
		// A bug in a pipeline step must not break the agent: fail open.
		if p := recover(); p != nil {
			h.log.Error("pipeline panic, forwarding unchanged", "session", a.session, "panic", p, "stack", string(debug.Stack()))
			a.body, a.fallback, a.routed, a.plan, a.freeze = body, FallbackError, false, nil, nil
		}
		a.tokensOut = compaction.Estimate(len(a.body))
		a.clock.assembled = time.Now()
	}()

	if mode == Native {
		// The baseline does no work it does not need: only a session without
		// a header needs the transcript (to derive its id).
		if a.session = sessionID(r.Header, nil); a.session != "" {
			return a
		}
	}
	// A session that names itself in a header is parsed from where its
	// body departs from its previous call's.
	t, err := h.parses.Parse(parseKey(r.Header, format), format, body, format.Hints(r.Header))
	a.session = sessionID(r.Header, t)
	if err != nil {
		a.invalid = true
		// Not ours to judge: the upstream answers malformed bodies itself.
		if mode != Native {
			a.fallback = FallbackError
		}
		h.log.Debug("forwarding unparsed body", "err", err)
		return a
	}
	a.transcript = t
	if mode == Native {
		return a
	}
	if r.Header.Get(headerAgent) != "" {
		h.subagent(r, a)
		return a
	}
	if !t.Kind.Side() || t.Kind == transcript.Compaction && mode == RCM {
		// The session's previous call may still be writing what this one
		// routes on. Title calls run beside agent calls: they neither wait
		// nor make others wait.
		c, local, replica := h.store.Begin(r.Context(), a.session)
		h.metrics.observeWait(local)
		h.metrics.observeWait(replica)
		a.call = c
	}
	switch {
	case t.Kind == transcript.Compaction && mode == RCM:
		a.fallback = FallbackSideCall
		if err := h.rewriteCompaction(a); err != nil {
			a.body, a.fallback = body, FallbackError
			h.warn("compaction rewrite failed, forwarding unchanged", a.session, err)
		}
		return a
	case t.Kind.Side():
		a.fallback = FallbackSideCall
		return a
	}
	switch {
	case len(t.Messages) > h.cfg.RouteMessages:
		// Routing grows faster than the history: a call this large goes
		// out whole rather than stall its client and the session's writes.
		a.fallback = FallbackTooLarge
		return a
	case r.Context().Err() != nil:
		return a // the client left: nobody waits for a decision
	}
	if err := h.route(r, a); err != nil {
		a.body, a.fallback, a.routed, a.plan = body, FallbackError, false, nil
		h.warn("routing failed, forwarding unchanged", a.session, err)
	}
	return a
}

// subagent handles a call of a subagent that shares its parent's session
// (Claude Code's, marked by x-claude-code-agent-id): its context is its own
// work only, so it goes out as sent, and it belongs to the parent's current
// task. It neither routes nor writes records, so it never changes what the
// parent's calls are routed on.
func (h *Handler) subagent(r *http.Request, a *assembly) {
	a.fallback = FallbackSideCall
	// The parent's call that started the subagent may still be writing.
	c, w := h.store.Await(r.Context(), a.session)
	h.metrics.observeWait(w)
	a.call = c
	if a.task = c.Task(); a.task != "" {
		a.routed, a.confidence, a.method = true, 1, "subagent"
	}
}

// warn logs a failure of the call's pipeline. One of an unreachable store
// is only counted (rcm_store_unavailable_total): the store logs it once
// per interval, and a log line per call would flood the log meanwhile.
func (h *Handler) warn(msg, session string, err error) {
	if errors.Is(err, memory.ErrUnavailable) {
		h.metrics.unavailable.WithLabelValues(msg).Inc()
		return
	}
	h.log.Warn(msg, "session", session, "err", err)
}

// kind names the call's kind for events and metrics: "invalid" when the
// body did not parse, "-" when native mode had no need to parse it.
func (a *assembly) kind() string {
	switch {
	case a.transcript != nil:
		return a.transcript.Kind.String()
	case a.invalid:
		return "invalid"
	}
	return "-"
}

func (a *assembly) setHeaders(h http.Header) {
	if a.session != "" {
		h.Set(HeaderSession, a.session)
	}
	if a.routed {
		if a.task != "" {
			h.Set(HeaderTask, a.task)
		}
		h.Set(HeaderConfidence, strconv.FormatFloat(a.confidence, 'f', 3, 64))
	}
	h.Set(HeaderFallback, a.fallback)
	setInt(h, HeaderTokensIn, a.tokensIn)
	setInt(h, HeaderTokensOut, a.tokensOut)
	if a.plan != nil && a.plan.Usage.Calls > 0 {
		u := a.plan.Usage
		h.Set(HeaderRouterCalls, strconv.Itoa(u.Calls)+" "+strconv.Itoa(u.Errors)+" "+strconv.Itoa(u.PromptTokens)+" "+strconv.Itoa(u.CompletionTokens)+" "+
			strconv.FormatFloat(float64(u.Latency)/float64(time.Millisecond), 'f', 3, 64))
	}
}

// response returns the writer that receives a copy of the upstream answer.
func (a *assembly) response() *limitedBuffer {
	a.resp.max = maxObserved
	return &a.resp
}

// done runs after the response has been sent: store writes happen here, off
// the request path, in the background, in the place in its session's writes
// the call reserved (memory.Call). The caller added the call to h.after
// before the answer went out, so that Close (and a test) waiting on it sees
// these writes, and the call's place gone.
func (h *Handler) done(r *http.Request, a *assembly) {
	h.metrics.observe(a)
	h.endTrace(a)
	write := a.session != "" && a.complete && a.status/100 == 2
	if a.session != "" && !a.complete && a.status/100 == 2 {
		h.log.Info("call not recorded: its answer did not reach the client whole", "session", a.session, "kind", a.kind())
	}
	parent := r.Header.Get("X-Parent-Session-Id")
	answered := time.Now()
	// h.after is done once the call's place is over, not only its writes:
	// a call that found it still registered would wait on it.
	a.call.Run(func() {
		if !write {
			a.call.Skip()
			return
		}
		defer func() { h.metrics.observeLag(time.Since(answered)) }()
		defer func() {
			if p := recover(); p != nil {
				h.log.Error("store update panic", "session", a.session, "panic", p, "stack", string(debug.Stack()))
			}
		}()
		if err := h.record(a, parent); err != nil {
			a.call.Release()
			h.warn("store update failed", a.session, err)
		}
	}, h.after.Done)
}

// record writes what one call taught rcm (the session, the turns' labels,
// new tasks, the task's record, the decision) in one transaction, then
// starts the optional memory model's summary.
func (h *Handler) record(a *assembly, parent string) error {
	kind := a.kind()
	rcm := a.mode == RCM && a.transcript != nil
	// Only the session's ordered writes are read ahead, and only they
	// mark what has committed: a title call's writes, unordered, must
	// not pass for the agent calls' before those commit.
	c := a.call
	if c == nil {
		c = h.store.Unordered(a.session)
	}
	w := &memory.Write{Session: a.session, Parent: parent, At: a.at, Tasks: newTasks(a)}
	w.Fps, w.Labels = newLabels(a)
	switch {
	case rcm && a.transcript.Kind == transcript.Compaction:
		w.Sections = summarySections(a)
	case rcm && a.observes():
		w.Task, w.Freeze = a.task, a.freeze
		o := a.observation()
		w.Observe = &o
		if r := a.record; r != nil && r.task == a.task {
			w.Record = &r.rec
		}
	case a.transcript != nil && a.transcript.Kind != transcript.Compaction:
		// The session's latest task is its latest agent call's.
		w.Task = a.task
	}
	ev, err := c.Commit(w, func() memory.Event {
		var share *float64
		if a.prefix != nil {
			<-a.prefix.this.ready
			share = a.prefix.share
		}
		ev := memory.Event{
			At: a.at, Kind: kind, Mode: string(a.mode), Task: a.task, Confidence: a.confidence, Method: a.method,
			Fallback: a.fallback, TokensIn: a.tokensIn, TokensOut: a.tokensOut,
		}
		a.details(&ev, share)
		return ev
	})
	if err == nil {
		h.feed.Publish(inspector.Call{Session: a.session, Event: ev})
	}
	if err != nil || !rcm || h.summarizer == nil {
		return err
	}
	// The memory model may take seconds: it runs outside the session's
	// order, so that the session's next call does not wait for it.
	h.after.Add(1)
	go func() {
		defer h.after.Done()
		if err := h.summarize(a); err != nil {
			h.warn("memory summary not stored", a.session, err)
		}
	}()
	return nil
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	bytes.Buffer
	max       int
	truncated bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room < len(p) {
		b.truncated = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
