package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
)

// statusClientClosed is nginx's status for a request whose client went away
// before the answer; it is logged, since nobody is left to read it.
const statusClientClosed = 499

// httpError is a failure rcm itself answers, in the OpenAI error shape so
// that every harness shows it as it shows a provider's own errors.
type httpError struct {
	Status int
	Code   string // machine-readable: upstream_unreachable, upstream_timeout, ...
	Err    error
}

func (e *httpError) Error() string { return e.Err.Error() }
func (e *httpError) Unwrap() error { return e.Err }

// classify maps an error of the upstream round trip to what the client gets:
// 499 when the client is gone, 504 on a timeout, 502 on anything else.
func classify(ctx context.Context, err error) *httpError {
	var pe *httpError
	if errors.As(err, &pe) {
		return pe
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return &httpError{statusClientClosed, "client_closed", err}
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return &httpError{http.StatusGatewayTimeout, "upstream_timeout", err}
	}
	return &httpError{http.StatusBadGateway, "upstream_unreachable", err}
}

// bodyError maps a failure to read the client's body: 413 past --max-body
// (on the wire or decoded), 415 for an encoding rcm does not decode, 499
// when the client left, 400 for anything else (a malformed chunked body, a
// corrupt gzip stream): the client's fault, not the upstream's.
func bodyError(ctx context.Context, err error) *httpError {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &httpError{http.StatusRequestEntityTooLarge, "body_too_large",
			fmt.Errorf("request body exceeds %d bytes (raise --max-body)", tooBig.Limit)}
	case errors.Is(err, errEncoding):
		return &httpError{http.StatusUnsupportedMediaType, "unsupported_encoding", err}
	case ctx.Err() != nil:
		return classify(ctx, err)
	}
	return &httpError{http.StatusBadRequest, "bad_body", fmt.Errorf("read request body: %w", err)}
}

// writeError answers the client with e in the OpenAI error shape.
func writeError(w http.ResponseWriter, e *httpError) {
	if e.Status == statusClientClosed {
		return
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": "rcm: " + e.Err.Error(),
		"type":    "rcm_error",
		"code":    e.Code,
		"param":   nil,
	}})
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="rcm"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	w.Write(body)
}
