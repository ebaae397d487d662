package proxy

import (
	"bytes"
	"io"
	"net/http"
)

// copyResponse streams src to w. For server-sent events it flushes at the
// end of every event (a blank line), so a client sees each token as soon as
// the upstream sends it; bytes of an unfinished event are flushed at the end
// of each read too, so nothing waits on the next event. tee, when not nil,
// receives a copy of every byte (the memory observer). It returns the bytes
// written and the first read or write error other than EOF.
func copyResponse(w http.ResponseWriter, src io.Reader, tee io.Writer, sse bool) (int64, error) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, rerr := src.Read(buf)
		if k > 0 {
			chunk := buf[:k]
			if tee != nil {
				tee.Write(chunk)
			}
			for len(chunk) > 0 {
				end := len(chunk)
				if sse {
					if i := eventEnd(chunk); i > 0 {
						end = i
					}
				}
				wn, werr := w.Write(chunk[:end])
				n += int64(wn)
				if werr != nil {
					return n, werr
				}
				if err := rc.Flush(); err != nil && err != http.ErrNotSupported {
					return n, err
				}
				chunk = chunk[end:]
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
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
