package proxy

import (
	"bytes"
	"net/http"
	"strconv"
	"time"

	"github.com/rcm-dev/rcm/compaction"
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
	mode       Mode
	threshold  float64
	session    string
	transcript *transcript.Transcript // nil when the body did not parse
	body       []byte                 // what goes upstream
	task       string
	confidence float64
	method     string
	routed     bool // a routing decision was made (task/confidence valid)
	fallback   string
	tokensIn   int
	tokensOut  int

	// Routing state kept for the writes after the response.
	plan       *router.Plan
	fps        []transcript.Fingerprint
	prior      []router.Prior
	knownTasks []string
	at         time.Time

	resp    limitedBuffer
	status  int
	latency time.Duration
}

// assemble builds the body to forward. It never fails: any internal error
// forwards the original body and says so (fallback "error").
func (h *Handler) assemble(r *http.Request, format transcript.Format, mode Mode, threshold float64, body []byte) *assembly {
	a := &assembly{mode: mode, threshold: threshold, body: body, fallback: FallbackNone, at: time.Now()}
	a.tokensIn = compaction.Estimate(len(body))
	defer func() { a.tokensOut = compaction.Estimate(len(a.body)) }()

	if mode == Native {
		// The baseline does no work it does not need: only a session without
		// a header needs the transcript (to derive its id).
		if a.session = sessionID(r.Header, nil); a.session != "" {
			return a
		}
	}
	t, err := transcript.Parse(format, body, r.Header)
	a.session = sessionID(r.Header, t)
	if err != nil {
		// Not ours to judge: the upstream answers malformed bodies itself.
		if mode != Native {
			a.fallback = FallbackError
		}
		h.log.Debug("forwarding unparsed body", "err", err)
		return a
	}
	a.transcript = t
	switch {
	case mode == Native:
		return a
	case t.Kind.Side():
		a.fallback = FallbackSideCall
		return a
	}
	if err := h.route(r, a); err != nil {
		a.body, a.fallback, a.routed, a.plan = body, FallbackError, false, nil
		h.log.Warn("routing failed, forwarding unchanged", "session", a.session, "err", err)
	}
	return a
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
}

// response returns the writer that receives a copy of the upstream answer.
func (a *assembly) response() *limitedBuffer {
	a.resp.max = maxObserved
	return &a.resp
}

// done runs after the response has been sent: store writes happen here, off
// the request path, in the background; Close waits for them.
func (h *Handler) done(r *http.Request, a *assembly) {
	if a.session == "" || a.status/100 != 2 {
		return
	}
	parent := r.Header.Get("X-Parent-Session-Id")
	h.after.Add(1)
	go func() {
		defer h.after.Done()
		if err := h.record(a, parent); err != nil {
			h.log.Warn("store update failed", "session", a.session, "err", err)
		}
	}()
}

// record writes what one call taught rcm: the session, the turns' labels,
// the decision.
func (h *Handler) record(a *assembly, parent string) error {
	if err := h.store.Touch(a.session, parent, a.at); err != nil {
		return err
	}
	if err := h.saveLabels(a); err != nil {
		return err
	}
	kind := "unparsed"
	if a.transcript != nil {
		kind = a.transcript.Kind.String()
	}
	return h.store.AppendEvent(a.session, memory.Event{
		At: a.at, Kind: kind, Mode: string(a.mode), Task: a.task, Confidence: a.confidence, Method: a.method,
		Fallback: a.fallback, TokensIn: a.tokensIn, TokensOut: a.tokensOut,
	})
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
