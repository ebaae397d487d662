package proxy

import (
	"bytes"
	"io"
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
}

func (e *events) Read(p []byte) (int, error) {
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
