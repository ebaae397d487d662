package transcript

import (
	"bytes"
	"errors"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// In the Responses API's WebSocket mode a client sends response.create
// frames; within one connection a frame may carry previous_response_id and
// only the items that are new since that response (Codex sends just the
// tool output), leaving the rest to what the server remembers of the
// connection. A proxy that rebuilds each call's context must see the whole
// history: Conversation keeps, per connection, what the client has sent
// and received, and expands such frames into full requests.

// ErrUnknownResponse is returned by Expand for a frame whose
// previous_response_id is not the connection's last completed response.
var ErrUnknownResponse = errors.New("transcript: previous_response_id is not the last response of this connection")

// Conversation is one WebSocket connection's history as its client sees
// it: the full input of the last request and the output items of its
// response. It is not safe for concurrent use.
type Conversation struct {
	items   []string // the history up to the last completed response
	last    string   // that response's id
	pending []string // the full input of the request in flight
	flying  bool     // a request is in flight
}

// Expand returns frame as a self-contained request: its input preceded by
// the history when it names the last response as previous_response_id, and
// without previous_response_id, so that whoever receives it needs no
// memory of earlier frames. Every other member keeps its bytes. The frame's
// full input becomes the request in flight, completed by Complete. A frame
// naming another response returns ErrUnknownResponse; one that is not a
// JSON object with an input array (or string) returns the parse error.
func (c *Conversation) Expand(frame []byte) ([]byte, error) {
	if !gjson.ValidBytes(frame) {
		return nil, ErrNotJSON
	}
	r := gjson.ParseBytes(frame)
	if !r.IsObject() {
		return nil, ErrNotObject
	}
	input := r.Get("input")
	var fresh []string
	switch {
	case input.IsArray():
		input.ForEach(func(_, it gjson.Result) bool {
			fresh = append(fresh, it.Raw)
			return true
		})
	case input.Type == gjson.String:
		fresh = []string{`{"role":"user","content":` + input.Raw + `}`}
	default:
		return nil, ErrNoMessages
	}
	prev := r.Get("previous_response_id")
	full := fresh
	if prev.Exists() && prev.Type != gjson.Null {
		if prev.Str == "" || prev.Str != c.last {
			return nil, ErrUnknownResponse
		}
		full = append(append(make([]string, 0, len(c.items)+len(fresh)), c.items...), fresh...)
	}
	c.pending, c.flying = full, true
	if !prev.Exists() && input.IsArray() {
		return frame, nil
	}
	var arr bytes.Buffer
	arr.Grow(len(frame) + len(full)*2)
	arr.WriteByte('[')
	arr.WriteString(strings.Join(full, ","))
	arr.WriteByte(']')
	out := make([]byte, 0, len(frame)+arr.Len())
	out = append(out, frame[:input.Index]...)
	out = append(out, arr.Bytes()...)
	out = append(out, frame[input.Index+len(input.Raw):]...)
	if prev.Exists() {
		var err error
		if out, err = sjson.DeleteBytes(out, "previous_response_id"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Complete records the response to the request in flight: its id and
// output items (raw, as ReadResponsesEvent returns them). A failed response
// leaves the history as it was.
func (c *Conversation) Complete(ev ResponsesEvent) {
	ok := ev.Done && ev.Type != "response.failed" && c.flying
	items := c.pending
	c.pending, c.flying = nil, false
	if !ok {
		return
	}
	for _, o := range ev.Output {
		items = append(items, string(o))
	}
	c.items, c.last = items, ev.ID
}

// Last returns the id of the last completed response.
func (c *Conversation) Last() string { return c.last }

// Len returns the number of items in the history.
func (c *Conversation) Len() int { return len(c.items) }
