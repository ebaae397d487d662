package transcript

import (
	"bytes"

	"github.com/tidwall/gjson"
)

// RequestModel returns the model a request body names ("" when none).
func RequestModel(body []byte) string {
	return gjson.GetBytes(body, "model").String()
}

// maxMeterEvent bounds one event (or a whole JSON answer) the meter keeps
// to read: a Responses stream's last event repeats the whole output.
const maxMeterEvent = 4 << 20

// Meter reads, as an answer streams through it, the model that answered
// and its usage, in any of the three wire formats, streamed (SSE) or not.
// It parses only events that carry them; what it cannot read it skips, so
// a cut or garbled answer leaves what was read before.
type Meter struct {
	// Model is the answering model, Usage its token accounting: Input
	// counts every input token, those served from the provider's cache
	// (Cached) and written to it (Written) too, as OpenAI counts them
	// (Anthropic counts them apart).
	Model string
	Usage Usage

	sse, sniffed bool
	line         []byte // the unfinished line of a stream; the whole body otherwise
	over         bool   // line outgrew maxMeterEvent: skip to its end
	anthropic    bool   // the answer counts its input as Anthropic does
	uncached     int64  // Anthropic's input_tokens
}

// NewMeter returns a meter for an answer whose Content-Type says sse.
func NewMeter(sse bool) *Meter { return &Meter{sse: sse} }

// Write reads p; it never fails.
func (m *Meter) Write(p []byte) (int, error) {
	n := len(p)
	if !m.sniffed && len(bytes.TrimLeft(p, " \t\r\n")) > 0 {
		m.sse, m.sniffed = sniffSSE(p, m.sse), true
	}
	if !m.sse {
		m.keep(p)
		return n, nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			m.keep(p)
			break
		}
		m.keep(p[:i])
		if !m.over {
			m.event(m.line)
		}
		m.line, m.over = m.line[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// keep appends p to the line, unless that outgrows maxMeterEvent.
func (m *Meter) keep(p []byte) {
	if m.over || len(m.line)+len(p) > maxMeterEvent {
		m.line, m.over = m.line[:0], true
		return
	}
	m.line = append(m.line, p...)
}

// Close reads a non-streamed answer, whole once its last byte is written.
func (m *Meter) Close() error {
	if !m.sse && !m.over {
		m.read(m.line)
	}
	m.line = nil
	return nil
}

// event reads one line of a stream: a data line that names a model or
// usage.
func (m *Meter) event(line []byte) {
	d, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\r")), []byte("data:"))
	if !ok || !bytes.Contains(d, []byte(`"usage"`)) && (m.Model != "" || !bytes.Contains(d, []byte(`"model"`))) {
		return
	}
	m.read(d)
}

// read takes the model and usage of one JSON object: a chat completion or
// chunk, an Anthropic message or its message_start and message_delta
// events, a Responses response or its events.
func (m *Meter) read(d []byte) {
	if !gjson.ValidBytes(d) {
		return
	}
	r := gjson.ParseBytes(d)
	if w := r.Get("message"); w.IsObject() {
		r, m.anthropic = w, true // message_start
	} else if w := r.Get("response"); w.IsObject() {
		r = w
	}
	if v := r.Get("model").String(); v != "" {
		m.Model = v
	}
	u := r.Get("usage")
	if !u.IsObject() {
		return
	}
	set := func(p *int64, v gjson.Result) {
		if v.Exists() {
			*p = v.Int()
		}
	}
	set(&m.Usage.Input, u.Get("prompt_tokens"))
	set(&m.Usage.Output, u.Get("completion_tokens"))
	set(&m.Usage.Cached, u.Get("prompt_tokens_details.cached_tokens"))
	set(&m.Usage.Output, u.Get("output_tokens"))
	set(&m.Usage.Cached, u.Get("input_tokens_details.cached_tokens"))
	if u.Get("cache_read_input_tokens").Exists() || u.Get("cache_creation_input_tokens").Exists() {
		m.anthropic = true
	}
	if !m.anthropic {
		set(&m.Usage.Input, u.Get("input_tokens"))
		return
	}
	// Anthropic's input_tokens are those neither read from nor written
	// to the cache; message_delta may repeat any of the three.
	set(&m.Usage.Cached, u.Get("cache_read_input_tokens"))
	set(&m.Usage.Written, u.Get("cache_creation_input_tokens"))
	set(&m.uncached, u.Get("input_tokens"))
	m.Usage.Input = m.uncached + m.Usage.Cached + m.Usage.Written
}
