package router

import (
	"context"
	"testing"

	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/transcript"
)

// store mimics the proxy's label store: labels by turn fingerprint, a
// routed label never replaced.
type store map[transcript.Fingerprint]Prior

func (s store) priors(tr *transcript.Transcript) []Prior {
	fps := tr.Fingerprints()
	ps := make([]Prior, len(fps))
	for i, fp := range fps {
		ps[i] = s[fp]
	}
	return ps
}

func (s store) put(tr *transcript.Transcript, p Plan) {
	for i, fp := range tr.Fingerprints() {
		if old, ok := s[fp]; ok && old.Routed {
			continue
		}
		s[fp] = p.Turns[i].prior()
	}
}

// prior returns the decision as the proxy stores it (a label).
func (d Decision) prior() Prior {
	return Prior{Known: true, Task: d.Task, Confidence: d.Confidence, Method: d.Method, Routed: d.Routed}
}

// route runs one call as the proxy would: priors in, labels out.
func (s store) route(t testing.TB, r *Router, raw []byte, opt Options) (*transcript.Transcript, Plan) {
	t.Helper()
	tr := chattest.Parse(t, raw)
	p, err := r.Route(context.Background(), tr, s.priors(tr), opt)
	if err != nil {
		t.Fatalf("route: %v", err)
	}
	s.put(tr, p)
	return tr, p
}
