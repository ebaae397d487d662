package scripted

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/gorilla/websocket"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
)

// upgrader takes any origin: a test double serves whoever calls it.
var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// socket serves the Responses API's WebSocket mode (Codex's): each
// response.create frame is a call, answered with the events an HTTP stream
// carries, one text frame each, in the order the frames came. As the API
// does, the connection remembers its last response: a frame naming it as
// previous_response_id continues it, and the rules read the frame with
// that history (Recorded.Full); a frame naming another is read as it is.
// The handshake itself is not recorded, each frame is (hs with the frame).
func (s *Server) socket(w http.ResponseWriter, r *http.Request, hs Recorded) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the client
	}
	defer conn.Close()
	conn.SetReadLimit(maxBody)
	// Frames are read apart from the answers so that a client going away
	// ends an answer that waits (a delay, a hanging reply).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	frames := make(chan []byte)
	go func() {
		defer cancel()
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			select {
			case frames <- msg:
			case <-ctx.Done():
				return
			}
		}
	}()
	var conv transcript.Conversation
	for {
		select {
		case <-ctx.Done():
			return
		case msg := <-frames:
			if !s.frame(ctx, conn, &conv, hs, msg) {
				return
			}
		}
	}
}

// frame answers one frame; false once the connection is gone.
func (s *Server) frame(ctx context.Context, conn *websocket.Conn, conv *transcript.Conversation, hs Recorded, msg []byte) bool {
	rec := hs
	rec.Body, rec.Full, rec.Frame = msg, msg, true
	if !gjson.ValidBytes(msg) {
		s.record(rec)
		return sendError(conn, http.StatusBadRequest, errorBody(http.StatusBadRequest, "frame is not valid JSON"))
	}
	if full, err := conv.Expand(msg); err == nil {
		rec.Full = full
	}
	out, err := s.complete(wireResponses, readCall(wireResponses, rec.Full, hs.Header), &rec)
	if err != nil {
		return sendError(conn, http.StatusInternalServerError, errorBody(http.StatusInternalServerError, err.Error()))
	}
	if !sleep(ctx, out.reply.Delay) {
		return false
	}
	if out.reply.failed() {
		return sendError(conn, out.reply.Status, out.reply.errorBody())
	}
	out.responsesStream(ctx, out.paced(ctx, func(_ string, data []byte) bool {
		if ev, ok := transcript.ReadResponsesEvent(data); ok && ev.Done {
			conv.Complete(ev)
		}
		return conn.WriteMessage(websocket.TextMessage, data) == nil
	}))
	return ctx.Err() == nil
}

// sendError sends an error event as the API does over a WebSocket: the
// status, and the error object of body (body itself when it has none, a
// string when it is not JSON).
func sendError(conn *websocket.Conn, status int, body []byte) bool {
	var e json.RawMessage
	switch {
	case gjson.GetBytes(body, "error").IsObject():
		e = json.RawMessage(gjson.GetBytes(body, "error").Raw)
	case gjson.ValidBytes(body):
		e = body
	default:
		e, _ = json.Marshal(string(body))
	}
	b, _ := json.Marshal(map[string]any{"type": "error", "status": status, "error": e})
	return conn.WriteMessage(websocket.TextMessage, b) == nil
}
