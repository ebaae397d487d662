package memory

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/transcript"
	bolt "go.etcd.io/bbolt"
)

func fp(i int) transcript.Fingerprint { return transcript.Fingerprint{0xfe, byte(i >> 8), byte(i)} }

func TestLabelsRoundTrip(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		at := time.Date(2025, 3, 1, 12, 0, 0, 123, time.UTC)
		fps := []transcript.Fingerprint{fp(1), fp(2), fp(3)}
		in := []Label{
			{Task: "t1", Confidence: 0.93, Method: "lexical", Routed: true, At: at},
			{Task: "t2", Confidence: 0.5, Method: "signal"},
			{Task: "", Confidence: 0, Method: ""},
		}
		if err := s.putLabels("s", fps, in); err != nil {
			t.Fatal(err)
		}
		got, found, err := s.Labels("s", []transcript.Fingerprint{fp(3), fp(9), fp(1), fp(2)})
		if err != nil {
			t.Fatal(err)
		}
		if want := []bool{true, false, true, true}; !reflect.DeepEqual(found, want) {
			t.Fatalf("found = %v, want %v", found, want)
		}
		want := []Label{in[2], {}, in[0], in[1]}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("labels = %+v\nwant %+v", got, want)
		}
		// Another session's labels and an unknown session are separate.
		got, found, err = s.Labels("other", fps)
		if err != nil || len(got) != 3 || found[0] || found[1] || found[2] {
			t.Errorf("unknown session: %+v %v %v", got, found, err)
		}
	})
}

func TestPutLabelsRejects(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		cases := map[string]struct {
			session string
			fps     []transcript.Fingerprint
			labels  []Label
		}{
			"length mismatch": {"s", []transcript.Fingerprint{fp(1)}, nil},
			"empty session":   {"", nil, nil},
			"long session":    {strings.Repeat("x", maxIDLen+1), nil, nil},
			"NaN confidence":  {"s", []transcript.Fingerprint{fp(1)}, []Label{{Confidence: math.NaN()}}},
			"confidence > 1":  {"s", []transcript.Fingerprint{fp(1)}, []Label{{Confidence: 1.5}}},
			"time too late":   {"s", []transcript.Fingerprint{fp(1)}, []Label{{At: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}}},
		}
		for name, c := range cases {
			if err := s.putLabels(c.session, c.fps, c.labels); err == nil {
				t.Errorf("%s: PutLabels succeeded", name)
			}
		}
		if _, found, _ := s.Labels("s", []transcript.Fingerprint{fp(1)}); found[0] {
			t.Error("a rejected label was stored")
		}
	})
}

func TestRoutedLabelsNeverChange(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		fps := []transcript.Fingerprint{fp(1), fp(2)}
		first := []Label{
			{Task: "t1", Confidence: 0.9, Method: "lexical", Routed: true},
			{Task: "t1", Confidence: 0.4, Method: "lexical"}, // fallback
		}
		if err := s.putLabels("s", fps, first); err != nil {
			t.Fatal(err)
		}
		second := []Label{
			{Task: "t2", Confidence: 0.99, Method: "llm", Routed: true},
			{Task: "t2", Confidence: 0.95, Method: "signal", Routed: true},
		}
		if err := s.putLabels("s", fps, second); err != nil {
			t.Fatal(err)
		}
		// A routed label may not even be demoted to a fallback one.
		third := []Label{{Task: "t3"}, {Task: "t3"}}
		if err := s.putLabels("s", fps, third); err != nil {
			t.Fatal(err)
		}
		got, _, err := s.Labels("s", fps)
		if err != nil {
			t.Fatal(err)
		}
		if want := []Label{first[0], second[1]}; !reflect.DeepEqual(got, want) {
			t.Errorf("labels = %+v\nwant %+v", got, want)
		}
	})
}

func putRaw(t *testing.T, s *Store, session string, bucket, key, val []byte) {
	t.Helper()
	err := s.b.(*boltStore).db.Update(func(tx *bolt.Tx) error {
		b, err := boltWriter{boltReader{tx}}.createSessionBucket(session, bucket)
		if err != nil {
			return err
		}
		return b.Put(key, val)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCorruptLabel(t *testing.T) {
	s := openTest(t, Options{})
	good := []Label{{Task: "t1", Confidence: 1, Routed: true}}
	if err := s.putLabels("s", []transcript.Fingerprint{fp(1)}, good); err != nil {
		t.Fatal(err)
	}
	bad := fp(2)
	putRaw(t, s, "s", bucketLabels, bad[:], []byte{labelV1, 0, 1})
	_, _, err := s.Labels("s", []transcript.Fingerprint{fp(1), bad})
	if !errors.Is(err, errLabelFormat) || !strings.Contains(err.Error(), bad.String()) {
		t.Fatalf("Labels = %v, want a corrupt-label error naming %s", err, bad)
	}
	// The good label is still readable, and a write repairs the bad one.
	if got, found, err := s.Labels("s", []transcript.Fingerprint{fp(1)}); err != nil || !found[0] || got[0] != good[0] {
		t.Fatalf("good label after corruption: %+v %v %v", got, found, err)
	}
	repair := []Label{{Task: "t2", Confidence: 0.9, Routed: true}}
	if err := s.putLabels("s", []transcript.Fingerprint{bad}, repair); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.Labels("s", []transcript.Fingerprint{bad}); err != nil || got[0] != repair[0] {
		t.Fatalf("repaired label: %+v %v", got, err)
	}
}

func TestLabelEncoding(t *testing.T) {
	l := Label{Task: "task", Confidence: 0.25, Method: "m", Routed: true, At: time.Unix(0, 42).UTC()}
	raw, err := encodeLabel(l)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeLabel(raw, nil); err != nil || got != l {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for i := range raw {
		if _, err := decodeLabel(raw[:i], nil); err == nil {
			t.Errorf("truncated to %d bytes: decoded", i)
		}
	}
	for name, mutate := range map[string]func([]byte){
		"version":       func(b []byte) { b[0] = 2 },
		"flags":         func(b []byte) { b[1] |= 0x80 },
		"time no flag":  func(b []byte) { b[1] &^= flagAt },
		"task too long": func(b []byte) { b[labelFixedLen] = 200 },
	} {
		b := bytes.Clone(raw)
		mutate(b)
		if _, err := decodeLabel(b, nil); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := decodeLabel(append(bytes.Clone(raw), 0), nil); err == nil {
		t.Error("trailing byte: decoded")
	}
}

func FuzzDecodeLabel(f *testing.F) {
	for _, l := range []Label{{}, {Task: "t1", Confidence: 0.8, Method: "lexical", Routed: true, At: time.Unix(1e9, 5)}} {
		raw, _ := encodeLabel(l)
		f.Add(raw)
	}
	f.Add([]byte{labelV1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x80, 0x80})
	f.Fuzz(func(t *testing.T, raw []byte) {
		l, err := decodeLabel(raw, map[string]string{})
		if err != nil {
			return
		}
		if math.IsNaN(l.Confidence) || l.Confidence < 0 || l.Confidence > 1 {
			return // not written by encodeLabel, which refuses such values
		}
		again, err := encodeLabel(l)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", l, err)
		}
		l2, err := decodeLabel(again, nil)
		if err != nil || l2 != l {
			t.Fatalf("re-decode: %+v %v, want %+v", l2, err, l)
		}
	})
}

func BenchmarkLabels200(b *testing.B) {
	s := openTest(b, Options{})
	const turns = 200
	fps := make([]transcript.Fingerprint, turns)
	labels := make([]Label, turns)
	at := time.Now()
	for i := range fps {
		fps[i] = fp(i)
		labels[i] = Label{Task: fmt.Sprintf("t%d", i%5), Confidence: 0.9, Method: "lexical", Routed: true, At: at}
	}
	if err := s.putLabels("session-with-200-turns", fps, labels); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_, found, err := s.Labels("session-with-200-turns", fps)
		if err != nil || !found[turns-1] {
			b.Fatal(err)
		}
	}
}
