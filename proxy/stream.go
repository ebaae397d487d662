package proxy

import (
	"bytes"
	"io"

	"github.com/rcm-dev/rcm/transcript"
)

// events hands an SSE body to httputil.ReverseProxy one event at a time:
// a Read never returns bytes past the end of the first event it holds, so
// the proxy, which flushes after every write (FlushInterval -1), flushes
// each event as soon as it is complete. Bytes of an unfinished event are
// returned as read, so nothing waits on the next event.
type events struct {
	src  io.ReadCloser
	rest []byte // read from src, not returned yet
	err  error  // src's error, returned once rest is drained
	// end, when not nil, finds the answer's terminal event in what Read
	// returns; delivered runs at the first Read after the bytes that end
	// it, which ReverseProxy makes only once it has written and flushed
	// them to the client.
	end       *ending
	delivered func()
}

func (e *events) Read(p []byte) (int, error) {
	if e.end != nil && e.end.final && e.delivered != nil {
		e.delivered()
		e.delivered = nil
	}
	n, err := e.read(p)
	if e.end != nil {
		e.end.scan(p[:n])
	}
	return n, err
}

func (e *events) read(p []byte) (int, error) {
	if len(e.rest) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		n, err := e.src.Read(p)
		if i := eventEnd(p[:n]); i > 0 && i < n {
			e.rest = append(e.rest[:0], p[i:n]...)
			e.err = err
			return i, nil
		}
		return n, err
	}
	n := len(e.rest)
	if i := eventEnd(e.rest); i > 0 {
		n = i
	}
	n = copy(p, e.rest[:n])
	e.rest = e.rest[n:]
	if len(e.rest) == 0 && e.err != nil {
		return n, e.err
	}
	return n, nil
}

func (e *events) Close() error { return e.src.Close() }

// ending reads an event stream's lines as they pass, keeping of each event
// only its name and the opening of its data, until the event its format
// says ends the answer (transcript.Format.Final) has passed whole.
type ending struct {
	format     transcript.Format
	line       []byte // the opening of the current line
	name, data []byte // the current event's name and the opening of its data
	final      bool   // the terminal event has passed
}

// maxEventHead bounds what ending keeps of a line: an event's type comes
// first, and the rest of a line (a whole response, in Responses) may be
// long.
const maxEventHead = 256

func (d *ending) scan(b []byte) {
	for len(b) > 0 && !d.final {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			d.line = appendHead(d.line, b)
			return
		}
		d.line = appendHead(d.line, b[:i])
		b = b[i+1:]
		line := bytes.TrimSuffix(d.line, []byte("\r"))
		switch {
		case len(line) == 0: // the end of an event
			d.final = (len(d.name) > 0 || len(d.data) > 0) && d.format.Final(d.name, d.data)
			d.name, d.data = d.name[:0], d.data[:0]
		case bytes.HasPrefix(line, []byte("event:")):
			d.name = append(d.name[:0], bytes.TrimSpace(line[len("event:"):])...)
		case bytes.HasPrefix(line, []byte("data:")) && len(d.data) == 0:
			d.data = append(d.data, bytes.TrimPrefix(line[len("data:"):], []byte(" "))...)
		}
		d.line = d.line[:0]
	}
}

// appendHead appends b to head up to maxEventHead bytes in all.
func appendHead(head, b []byte) []byte {
	return append(head, b[:min(len(b), max(maxEventHead-len(head), 0))]...)
}

// eventEnd returns the index just past the first event terminator ("\n\n"
// or "\r\n\r\n") in b, or 0 when b holds none.
func eventEnd(b []byte) int {
	i := bytes.Index(b, []byte("\n\n"))
	j := bytes.Index(b, []byte("\r\n\r\n"))
	switch {
	case i < 0 && j < 0:
		return 0
	case j >= 0 && (i < 0 || j < i):
		return j + 4
	}
	return i + 2
}

// observed is an upstream answer's body as the assembly sees it: tee, when
// not nil, receives a copy of every byte (the memory observer), and eof
// says whether the upstream sent the answer to its end.
type observed struct {
	src io.ReadCloser
	tee io.Writer
	eof bool
}

func (o *observed) Read(p []byte) (int, error) {
	n, err := o.src.Read(p)
	if n > 0 && o.tee != nil {
		o.tee.Write(p[:n])
	}
	if err == io.EOF {
		o.eof = true
	}
	return n, err
}

func (o *observed) Close() error { return o.src.Close() }
