package replay

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/scripted"
	"github.com/tidwall/gjson"
)

// The tools array OpenCode 1.18.33 sent in a real capture
// (testdata/opencode/first_agent_request.body.json): every replayed call
// carries it, so bodies have a harness's real size and shape.
//
//go:embed opencode_tools.json
var opencodeTools []byte

// marshal encodes as a JavaScript harness does: no HTML escaping.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// writeString writes s as a JSON string, as marshal encodes it.
func writeString(b *bytes.Buffer, s string) {
	v, _ := marshal(s) // a string always encodes
	b.Write(v)
}

// bodyParts are what a schedule's calls send, built as the history grows:
// the body of call k is head (up to and including its last message) and
// tail, the same for every call. Appending never changes bytes an earlier
// call sent; a compaction starts a new head.
type bodyParts struct {
	head, tail []byte
	base       int // head's bytes before the first message, set by the first call
	n, from    int // head holds msgs[0] and msgs[from:n]; n is 0 before the first call
}

func newBodyParts(model, api string) *bodyParts {
	b := &bodyParts{}
	b.head = append(b.head, `{"model":`...)
	b.head = strconv.AppendQuote(b.head, model)
	if api == APIResponses {
		// Codex's and OpenCode's Responses shape: the history as input
		// items, flat function tools.
		b.head = append(b.head, `,"max_output_tokens":32000,"input":[`...)
		b.tail = append(b.tail, `],"tools":`...)
		b.tail = append(b.tail, responsesTools(opencodeTools)...)
		b.tail = append(b.tail, `,"tool_choice":"auto","stream":true}`...)
		return b
	}
	b.head = append(b.head, `,"max_tokens":32000,"messages":[`...)
	b.tail = append(b.tail, `],"tools":`...)
	if api == APIMessages {
		b.tail = append(b.tail, anthropicTools(opencodeTools)...)
		b.tail = append(b.tail, `,"stream":true}`...)
		return b
	}
	b.tail = append(b.tail, opencodeTools...)
	b.tail = append(b.tail, `,"tool_choice":"auto","stream":true,"stream_options":{"include_usage":true}}`...)
	return b
}

// start makes head the body's opening and the system prompt msgs[0], for a
// history whose other messages start at msgs[from].
func (b *bodyParts) start(msgs [][]byte, from int) {
	if b.n == 0 {
		b.base = len(b.head)
	}
	b.head = append(append(make([]byte, 0, b.base+len(msgs[0])), b.head[:b.base]...), msgs[0]...)
	b.n, b.from = from, from
}

// body returns the request of a call holding msgs[0] (the system prompt)
// and msgs[from:n] (each message's JSON as the API carries it), as head and
// tail, to be sent one after the other. from is 1 but after a compaction.
func (b *bodyParts) body(msgs [][]byte, from, n int) [2][]byte {
	if b.n == 0 || from != b.from {
		b.start(msgs, from)
	}
	for ; b.n < n; b.n++ {
		b.head = append(b.head, ',')
		b.head = append(b.head, msgs[b.n]...)
	}
	return [2][]byte{b.head, b.tail}
}

// known holds the messages a replay sends, each encoded for its API and
// decoded: a forwarded message with the same JSON needs no decoding.
type known struct {
	api   string
	msgs  map[string]Forwarded  // by JSON (see parseMessages)
	items map[string]knownItems // the Responses API's, by first item (see parseItems)
}

func newKnown(api string) *known {
	return &known{api: api, msgs: map[string]Forwarded{}, items: map[string]knownItems{}}
}

// encode returns m's JSON as the API carries it, and knows it from then on.
func (k *known) encode(m chat.Message) ([]byte, error) {
	var b []byte
	var err error
	switch k.api {
	case APIMessages:
		b, err = anthropicMessage(m)
	case APIResponses:
		b = responsesItems(m)
	default:
		b, err = marshal(m)
	}
	if err != nil {
		return nil, err
	}
	f := Forwarded{Role: m.Role, Text: messageText(m), Key: messageKey(m), Bytes: len(b)}
	k.msgs[string(b)] = f
	if k.api == APIResponses {
		items := gjson.Parse("[" + string(b) + "]").Array()
		k.items[items[0].Raw] = knownItems{raw: string(b), n: len(items), f: f}
	}
	return b, nil
}

// parse decodes a forwarded body's history member.
func (k *known) parse(msgs gjson.Result) []Forwarded {
	if k.api == APIResponses {
		return parseItems(msgs, k.items)
	}
	return parseMessages(msgs, k.msgs)
}

// post sends one call as OpenCode would, its body the concatenation of
// parts, and reads the stream to its end.
func (r *runner) post(ctx context.Context, url, sid string, hdr http.Header, parts ...[]byte) (http.Header, error) {
	readers := make([]io.Reader, len(parts))
	size := 0
	for i, p := range parts {
		readers[i] = bytes.NewReader(p)
		size += len(p)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, io.MultiReader(readers...))
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(size)
	req.Header = hdr
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer rcm-bench")
	req.Header.Set("User-Agent", "rcm-bench (opencode/1.18.33 shape)")
	req.Header.Set("x-session-id", sid)
	resp, err := r.opts.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	if err := readStream(resp.Body); err != nil {
		return nil, err
	}
	return resp.Header, nil
}

// readStream reads an SSE body to its end and checks it finished with
// "data: [DONE]" (chat) or Anthropic's message_stop event.
func readStream(body io.Reader) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	done := false
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if bytes.Equal(line, []byte("data: [DONE]")) || bytes.Equal(line, []byte("event: message_stop")) || bytes.Equal(line, []byte("event: response.completed")) {
			done = true
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the stream: %w", err)
	}
	if !done {
		return errors.New("stream ended without data: [DONE], message_stop or response.completed")
	}
	return nil
}

// reply is the scripted answer that replays a recorded assistant message.
func reply(m chat.Message) scripted.Reply {
	r := scripted.Reply{Text: m.Content}
	for _, c := range m.ToolCalls {
		r.ToolCalls = append(r.ToolCalls, scripted.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return r
}
