package proxy

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// maxSessionID is the longest session id rcm accepts (X-RCM-Session,
// x-session-id, x-session-affinity); longer ids get 400.
const maxSessionID = 256

// sessionHeaders are the request headers that name a session, strongest
// first (see sessionID).
var sessionHeaders = []string{HeaderSession, "X-Session-Id", "X-Session-Affinity", "X-Claude-Code-Session-Id", "Session-Id", "Thread-Id"}

// checkSession rejects a session header rcm would not store, log or serve
// back safely: at most maxSessionID bytes of ASCII letters, digits and
// ". _ : - / @ + =" (ids such as "ses_01J...", "bench-x-django__django-1/near").
func checkSession(h http.Header) error {
	for _, name := range sessionHeaders {
		vs, ok := h[http.CanonicalHeaderKey(name)]
		if !ok {
			continue
		}
		v := strings.Join(vs, ",")
		if v == "" || len(v) > maxSessionID || strings.IndexFunc(v, badSessionRune) >= 0 {
			if len(v) > 32 {
				v = v[:32] + "..."
			}
			return fmt.Errorf("%s %q: want 1 to %d ASCII letters, digits or any of ._:-/@+=", name, v, maxSessionID)
		}
	}
	return nil
}

func badSessionRune(c rune) bool {
	return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._:-/@+=", c))
}

// ParseThreshold reads a router threshold as X-RCM-Threshold, --threshold
// and the bench's --thresholds give it: a plain decimal in (0, 1]. NaN,
// infinities, hex floats and exponents are refused, though ParseFloat
// takes them, so that what is written is what the router uses. 0 is
// refused, not replaced: it would route calls of confidence 0, the
// confidence of a decision that is not finite, which must fall back (a
// small threshold such as 0.01 routes nearly every call).
func ParseThreshold(v string) (float64, error) {
	t, err := strconv.ParseFloat(v, 64)
	if v == "" || strings.Trim(v, "0123456789.") != "" || err != nil || !(t > 0 && t <= 1) {
		return 0, errThreshold
	}
	return t, nil
}

// errThreshold is ParseThreshold's error; callers say where the value came
// from.
var errThreshold = errors.New("want a decimal number in (0, 1]")

// errEncoding is a Content-Encoding rcm does not decode.
var errEncoding = errors.New("unsupported Content-Encoding")

// readBody reads the request body, decoded when the client compressed it
// (Content-Encoding gzip, deflate or zstd), at most limit bytes on the wire
// and at most limit decoded (a decompression bomb stops there). It reads in
// one allocation when the client declared the length of a plain body.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	var src io.Reader = http.MaxBytesReader(w, r.Body, limit)
	var buf bytes.Buffer
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		if n := r.ContentLength; n > 0 && n <= limit {
			buf.Grow(int(n) + 1) // +1: ReadFrom's final read finds room and sees EOF
		}
		_, err := buf.ReadFrom(src)
		return buf.Bytes(), err
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		src = zr
	case "deflate":
		// HTTP's deflate is the zlib format (RFC 9110 8.4.1.2).
		zr, err := zlib.NewReader(src)
		if err != nil {
			return nil, fmt.Errorf("deflate: %w", err)
		}
		src = zr
	case "zstd":
		zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderMaxWindow(uint64(max(limit, zstd.MinWindowSize))))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer zr.Close()
		src = zr
	default:
		return nil, fmt.Errorf("%w %q (rcm decodes gzip, deflate and zstd)", errEncoding, enc)
	}
	_, err := buf.ReadFrom(io.LimitReader(src, limit+1))
	if err == nil && int64(buf.Len()) > limit ||
		errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		err = &http.MaxBytesError{Limit: limit}
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s body: %w", r.Header.Get("Content-Encoding"), err)
	}
	return buf.Bytes(), nil
}
