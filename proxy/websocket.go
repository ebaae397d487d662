package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rcm-dev/rcm/transcript"
)

// The Responses API's WebSocket mode in router and rcm mode: rcm terminates
// both connections (gorilla/websocket) and rebuilds each response.create
// frame as it rebuilds an HTTP call. Codex sends, within one connection,
// previous_response_id and only the new items; rcm keeps the connection's
// conversation (transcript.Conversation), expands such a frame into the
// full history, routes it, and sends it upstream self-contained: full
// input, no previous_response_id. The upstream's memory of the previous
// response is the context rcm forwarded last time (another task's routed
// view, or the record message), so chaining on it would mix tasks or
// repeat items; with store false nothing outlives the connection anyway.
// Prewarm frames and side calls go up as the client's full history,
// unrouted. Native mode and other routes keep ReverseProxy's byte-for-byte
// relay (upgrade.go).

// wsWriteWait bounds a control frame write (close, pong).
const wsWriteWait = 5 * time.Second

// wsHeaders are the handshake headers gorilla's Dialer sets itself.
var wsHeaders = []string{"Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Extensions", "Sec-Websocket-Protocol"}

// serveWebSocket relays one WebSocket connection of the Responses API,
// rebuilding its frames in mode (router or rcm).
func (h *Handler) serveWebSocket(w http.ResponseWriter, r *http.Request, path string, mode Mode, threshold float64) {
	if !harness(r) {
		writeError(w, &httpError{http.StatusForbidden, "origin_refused", errors.New("websocket from a browser origin refused")})
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	up, resp, err := h.dialUpstream(ctx, r, path)
	if err != nil {
		if resp != nil {
			// Refused upstream (Codex then falls back to HTTP): the client
			// gets the same refusal.
			defer resp.Body.Close()
			for name, vs := range resp.Header {
				w.Header()[name] = vs
			}
			removeHopHeaders(w.Header())
			w.WriteHeader(resp.StatusCode)
			io.Copy(w, io.LimitReader(resp.Body, 1<<20))
			return
		}
		e := classify(ctx, err)
		h.log.Warn("websocket upstream dial failed", "path", path, "status", e.Status, "err", err)
		writeError(w, e)
		return
	}
	defer up.Close()
	hdr := http.Header{}
	for name, vs := range resp.Header {
		if !strings.HasPrefix(name, "Sec-Websocket-") && name != "Upgrade" && name != "Connection" {
			hdr[name] = vs
		}
	}
	hdr.Set(HeaderMode, string(mode))
	upgrader := websocket.Upgrader{EnableCompression: true, CheckOrigin: harness}
	client, err := upgrader.Upgrade(w, r, hdr)
	if err != nil {
		return // Upgrade answered the client
	}
	defer client.Close()
	client.SetReadLimit(h.cfg.MaxBody)
	up.SetReadLimit(h.cfg.MaxBody)
	c := &wsConn{h: h, r: r.WithContext(ctx), mode: mode, threshold: threshold, client: client, up: up}
	errc := make(chan error, 2)
	go func() { errc <- c.fromClient() }()
	go func() { errc <- c.fromUpstream() }()
	err = <-errc
	cancel()
	c.close(err)
	<-errc
	c.finish()
}

// hopHeaders are the hop-by-hop headers (RFC 9110, 7.6.1), which a
// terminated connection does not pass on; ReverseProxy drops them itself on
// the other routes.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for name := range strings.SplitSeq(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// harness reports whether a handshake comes from a harness rather than a
// browser page, which must not use rcm (and its upstream key) as a relay:
// browsers always send Origin, harnesses do not.
func harness(r *http.Request) bool { return r.Header.Get("Origin") == "" }

// dialUpstream opens the upstream connection at the call's upstream URL
// (upstreamURL, over ws or wss), with the client's handshake headers less
// hop-by-hop and WebSocket's own ones (upstreamHeader does the rest).
func (h *Handler) dialUpstream(ctx context.Context, r *http.Request, path string) (*websocket.Conn, *http.Response, error) {
	u := h.upstreamURL(path, r.URL.RawQuery)
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	case "http":
		u.Scheme = "ws"
	}
	hdr := r.Header.Clone()
	removeHopHeaders(hdr)
	for _, name := range wsHeaders {
		hdr.Del(name)
	}
	h.upstreamHeader(hdr, path)
	d := websocket.Dialer{
		Proxy:             http.ProxyFromEnvironment,
		HandshakeTimeout:  h.cfg.DialTimeout + h.cfg.HeaderTimeout,
		EnableCompression: true,
	}
	d.NetDialContext = h.transport.DialContext
	d.TLSClientConfig = h.transport.TLSClientConfig
	return d.DialContext(ctx, u.String(), hdr)
}

// wsConn is one relayed connection: the client's conversation and the
// assemblies of the responses in flight, oldest first.
type wsConn struct {
	h         *Handler
	r         *http.Request // the handshake, with the connection's context
	mode      Mode
	threshold float64
	client    *websocket.Conn
	up        *websocket.Conn

	mu      sync.Mutex
	conv    transcript.Conversation
	pending []*assembly
}

// fromClient reads the client's frames, rebuilds each response.create and
// sends it upstream; other frames go up unchanged.
func (c *wsConn) fromClient() error {
	for {
		kind, msg, err := c.client.ReadMessage()
		if err != nil {
			return &wsEnd{side: "client", err: err}
		}
		if kind == websocket.TextMessage {
			msg = c.rebuild(msg)
		}
		if err := c.up.WriteMessage(kind, msg); err != nil {
			return &wsEnd{side: "upstream", err: err}
		}
	}
}

// rebuild returns the frame to send upstream for a client frame.
func (c *wsConn) rebuild(frame []byte) []byte {
	c.mu.Lock()
	full, err := c.conv.Expand(frame)
	c.mu.Unlock()
	if err != nil {
		// Not a request rcm can place (another frame type, or a response
		// id it never saw): the upstream judges it as sent.
		c.h.log.Info("websocket frame forwarded as sent", "err", err)
		return frame
	}
	c.h.after.Add(1)
	a := c.h.assemble(c.r, transcript.OpenAIResponses, c.mode, c.threshold, full)
	a.sse = true // the tee holds the events as an event stream
	a.clock.in = a.at
	c.h.startTrace(c.r, a, transcript.OpenAIResponses, "/v1/responses", full)
	c.h.openUpstream(a, "response.create")
	a.events = a.tee(true)
	c.mu.Lock()
	c.pending = append(c.pending, a)
	c.mu.Unlock()
	// The frame goes upstream as this returns: the mark the added
	// latency ends at and the time to the first event starts from.
	a.clock.out.Store(time.Now().UnixNano())
	return a.body
}

// fromUpstream relays the upstream's frames to the client unchanged and
// reads the Responses events among them: the conversation's output items,
// the answer teed for the record, the end of each response.
func (c *wsConn) fromUpstream() error {
	for {
		kind, msg, err := c.up.ReadMessage()
		if err != nil {
			return &wsEnd{side: "upstream", err: err}
		}
		// Observed first: the client answers response.completed with a
		// frame chained on it, which must find the response recorded.
		if kind == websocket.TextMessage {
			c.observe(msg)
		}
		if err := c.client.WriteMessage(kind, msg); err != nil {
			return &wsEnd{side: "client", err: err}
		}
	}
}

func (c *wsConn) observe(msg []byte) {
	ev, ok := transcript.ReadResponsesEvent(msg)
	if !ok {
		return
	}
	c.mu.Lock()
	var a *assembly
	if len(c.pending) > 0 {
		a = c.pending[0]
	}
	if a != nil {
		a.clock.first.CompareAndSwap(0, time.Now().UnixNano())
	}
	if a != nil && a.events != nil {
		w := a.events
		w.Write([]byte("data: "))
		w.Write(msg)
		w.Write([]byte("\n\n"))
	}
	end := ev.Done || ev.Type == "error"
	if end {
		c.conv.Complete(ev)
		if a != nil {
			c.pending = c.pending[1:]
		}
	}
	c.mu.Unlock()
	if end && a != nil {
		a.status = http.StatusOK
		if ev.Type != "response.completed" {
			a.status = http.StatusBadGateway // not learnt from
		}
		a.complete = true
		a.latency = time.Since(a.at)
		c.h.done(c.r, a)
	}
}

// finish ends the assemblies still waiting for their response (the
// connection ended first): nothing is learnt from them.
func (c *wsConn) finish() {
	c.mu.Lock()
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, a := range pending {
		c.h.done(c.r, a)
	}
}

// wsEnd is why a relayed connection ended: which side's read or write
// failed, and how.
type wsEnd struct {
	side string
	err  error
}

func (e *wsEnd) Error() string { return e.side + ": " + e.err.Error() }
func (e *wsEnd) Unwrap() error { return e.err }

// close ends both connections after one side ended: a close frame from one
// side goes to the other with its code and reason; a side that dropped
// gets the other a 1011 (upstream gone) or 1001 (client gone) saying so.
func (c *wsConn) close(err error) {
	var end *wsEnd
	if !errors.As(err, &end) {
		end = &wsEnd{side: "upstream", err: err}
	}
	peer := c.client
	if end.side == "client" {
		peer = c.up
	}
	code, reason := websocket.CloseInternalServerErr, "rcm: upstream connection lost: "+end.err.Error()
	if end.side == "client" {
		code, reason = websocket.CloseGoingAway, "rcm: client connection lost"
	}
	// A close frame is relayed; 1006 (abnormal) is gorilla's name for a
	// connection that ended without one, and 1005 a close frame without a
	// code: neither may go on the wire.
	var ce *websocket.CloseError
	if errors.As(end.err, &ce) && ce.Code != websocket.CloseAbnormalClosure {
		code, reason = ce.Code, ce.Text
		if code == websocket.CloseNoStatusReceived {
			code = websocket.CloseNormalClosure
		}
	}
	if len(reason) > 123 { // a control frame's payload is at most 125 bytes
		reason = reason[:123]
	}
	c.h.log.Info("websocket closed", "side", end.side, "code", code, "err", end.err)
	peer.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(wsWriteWait))
	// Unblock the other reader.
	c.client.NetConn().SetReadDeadline(time.Now())
	c.up.NetConn().SetReadDeadline(time.Now())
}

// isWebSocket reports whether r asks for a WebSocket.
func isWebSocket(r *http.Request) bool {
	return isUpgrade(r) && strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}
