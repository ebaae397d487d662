package memory

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rcm-dev/rcm/transcript"
)

// Label is the task a turn was assigned to.
type Label struct {
	Task       string
	Confidence float64
	Method     string // how the router decided (e.g. "signal", "lexical", "llm")
	// Routed is set once the turn has been forwarded routed; from then on
	// the label never changes. A fallback (unrouted) label may be replaced.
	Routed bool
	At     time.Time
}

// Labels returns the stored label of each fingerprint of session, and
// whether it was found, in one read.
func (s *Store) Labels(session string, fps []transcript.Fingerprint) (labels []Label, found []bool, err error) {
	err = s.view("labels "+session, func(r reader) error {
		labels, found, err = r.labels(session, fps)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return labels, found, nil
}

// decodeLabels decodes the label raw gives of each of fps (nil: none).
func decodeLabels(fps []transcript.Fingerprint, raw func(transcript.Fingerprint) []byte) ([]Label, []bool, error) {
	labels := make([]Label, len(fps))
	found := make([]bool, len(fps))
	// Turns of a session share a handful of task and method names;
	// interning them saves an allocation per label.
	names := make(map[string]string, 8)
	for i, fp := range fps {
		v := raw(fp)
		if v == nil {
			continue
		}
		l, err := decodeLabel(v, names)
		if err != nil {
			return nil, nil, fmt.Errorf("label %s: %w", fp, err)
		}
		labels[i], found[i] = l, true
	}
	return labels, found, nil
}

// PutLabels stores labels[i] for fps[i] of session. A
// label already stored with Routed set is kept as it is; any other (or an
// undecodable one) is replaced.
func (w *Tx) PutLabels(session string, fps []transcript.Fingerprint, labels []Label) error {
	if err := checkID("session", session); err != nil {
		return fmt.Errorf("memory: put labels: %w", err)
	}
	if len(fps) != len(labels) {
		return fmt.Errorf("memory: put labels %s: %d fingerprints but %d labels", session, len(fps), len(labels))
	}
	vals := make([][]byte, len(labels))
	for i, l := range labels {
		v, err := encodeLabel(l)
		if err != nil {
			return fmt.Errorf("memory: put labels %s: label %s: %w", session, fps[i], err)
		}
		vals[i] = v
	}
	// In key order: bbolt splits nodes only at commit, so a put in the
	// middle of a node moves everything after it, and random keys make a
	// call with n new turns cost O(n²) (300k messages: minutes inside
	// the writer lock); in order, each put appends.
	order := make([]int, len(fps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return bytes.Compare(fps[a][:], fps[b][:]) })
	sorted := make([]transcript.Fingerprint, len(order))
	svals := make([][]byte, len(order))
	for j, i := range order {
		sorted[j], svals[j] = fps[i], vals[i]
	}
	return w.do("put labels "+session, func() error { return w.w.putLabels(session, sorted, svals) })
}

// Label encoding, version 1:
//
//	[0]     format version (1)
//	[1]     flags: bit 0 routed, bit 1 At is set
//	[2:10]  confidence, IEEE 754 bits, big endian
//	[10:18] At as Unix nanoseconds, big endian (0 when unset)
//	then    uvarint length + task, uvarint length + method
//
// A binary layout, not JSON: Labels runs on the request path for every
// turn of the session.
const (
	labelV1       = 1
	flagRouted    = 1 << 0
	flagAt        = 1 << 1
	labelFixedLen = 18
)

var errLabelFormat = errors.New("corrupt label value")

// The range of times that Unix nanoseconds represent.
var (
	minLabelTime = time.Unix(0, math.MinInt64)
	maxLabelTime = time.Unix(0, math.MaxInt64)
)

func encodeLabel(l Label) ([]byte, error) {
	if math.IsNaN(l.Confidence) || l.Confidence < 0 || l.Confidence > 1 {
		return nil, fmt.Errorf("confidence %v outside [0, 1]", l.Confidence)
	}
	var flags byte
	var at int64
	if l.Routed {
		flags |= flagRouted
	}
	if !l.At.IsZero() {
		if l.At.Before(minLabelTime) || l.At.After(maxLabelTime) {
			return nil, fmt.Errorf("time %v out of range", l.At)
		}
		flags |= flagAt
		at = l.At.UnixNano()
	}
	buf := make([]byte, 0, labelFixedLen+2*binary.MaxVarintLen16+len(l.Task)+len(l.Method))
	buf = append(buf, labelV1, flags)
	buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(l.Confidence))
	buf = binary.BigEndian.AppendUint64(buf, uint64(at))
	buf = binary.AppendUvarint(buf, uint64(len(l.Task)))
	buf = append(buf, l.Task...)
	buf = binary.AppendUvarint(buf, uint64(len(l.Method)))
	buf = append(buf, l.Method...)
	return buf, nil
}

// labelRouted reports whether raw is a decodable label with Routed set.
func labelRouted(raw []byte) bool {
	l, err := decodeLabel(raw, nil)
	return err == nil && l.Routed
}

// decodeLabel decodes raw, copying every byte it keeps. names, when not
// nil, interns task and method strings across calls.
func decodeLabel(raw []byte, names map[string]string) (Label, error) {
	if len(raw) < labelFixedLen {
		return Label{}, fmt.Errorf("%w: %d bytes", errLabelFormat, len(raw))
	}
	if raw[0] != labelV1 {
		return Label{}, fmt.Errorf("%w: unknown format %d", errLabelFormat, raw[0])
	}
	flags := raw[1]
	if flags&^(flagRouted|flagAt) != 0 {
		return Label{}, fmt.Errorf("%w: unknown flags %#x", errLabelFormat, flags)
	}
	l := Label{
		Confidence: math.Float64frombits(binary.BigEndian.Uint64(raw[2:10])),
		Routed:     flags&flagRouted != 0,
	}
	at := int64(binary.BigEndian.Uint64(raw[10:18]))
	if flags&flagAt != 0 {
		l.At = time.Unix(0, at).UTC()
	} else if at != 0 {
		return Label{}, fmt.Errorf("%w: time without flag", errLabelFormat)
	}
	rest := raw[labelFixedLen:]
	var err error
	if l.Task, rest, err = decodeString(rest, names); err != nil {
		return Label{}, fmt.Errorf("%w: task: %v", errLabelFormat, err)
	}
	if l.Method, rest, err = decodeString(rest, names); err != nil {
		return Label{}, fmt.Errorf("%w: method: %v", errLabelFormat, err)
	}
	if len(rest) != 0 {
		return Label{}, fmt.Errorf("%w: %d trailing bytes", errLabelFormat, len(rest))
	}
	return l, nil
}

func decodeString(b []byte, names map[string]string) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return "", nil, errors.New("bad length")
	}
	b = b[k:]
	if n > uint64(len(b)) {
		return "", nil, fmt.Errorf("length %d exceeds the %d bytes left", n, len(b))
	}
	v := b[:n]
	if names == nil {
		return string(v), b[n:], nil
	}
	s, ok := names[string(v)] // no allocation for the lookup
	if !ok {
		s = string(v)
		names[s] = s
	}
	return s, b[n:], nil
}
