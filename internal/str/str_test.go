package str

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 3, "abc"},
		{"abcdef", 3, "abc"},
		{"abc", 0, ""},
		{"", 0, ""},
		// A cut inside a character leaves it out (the rule router's clip
		// lacked: it cut bytes, leaving invalid UTF-8 at the end).
		{"aé", 2, "a"},
		{"aé", 3, "aé"},
		{"日本語", 4, "日"},
		{"日本語", 2, ""},
		{"😀x", 3, ""},
		{"😀x", 4, "😀"},
	} {
		got := Clip(c.s, c.n)
		if got != c.want || len(got) > c.n || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestQuote(t *testing.T) {
	for _, c := range []struct{ s, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{`<task id="t1"> & more`, `"<task id=\"t1\"> & more"`},
		{"a\nb\t\\c\x01", `"a\nb\t\\c\u0001"`},
		{"\u2028", `"\u2028"`},
		{"bad \xff byte", `"bad \ufffd byte"`},
		{"ünïcode", `"ünïcode"`},
	} {
		got := Quote(c.s)
		if string(got) != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.s, got, c.want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("Quote(%q) = %s: not JSON: %v", c.s, got, err)
		}
	}
}

func TestCommonPrefix(t *testing.T) {
	long := make([]byte, 10000)
	for i := range long {
		long[i] = byte(i)
	}
	changed := func(at int) []byte {
		b := append([]byte(nil), long...)
		b[at]++
		return b
	}
	for _, c := range []struct {
		a, b []byte
		want int
	}{
		{nil, nil, 0},
		{[]byte("abc"), []byte("abd"), 2},
		{[]byte("abc"), []byte("abcdef"), 3},
		{long, long, len(long)},
		{long, changed(0), 0},
		{long, changed(4095), 4095},
		{long, changed(4096), 4096},
		{long, changed(9999), 9999},
		{long[:5000], long, 5000},
	} {
		if got := CommonPrefix(c.a, c.b); got != c.want {
			t.Errorf("CommonPrefix(%d bytes, %d bytes) = %d, want %d", len(c.a), len(c.b), got, c.want)
		}
	}
	// Every place of the first difference, and every length of the
	// shorter: each block size ends at each of them somewhere.
	for at := range 4400 {
		b := changed(at)
		if got := CommonPrefix(long, b); got != at {
			t.Fatalf("CommonPrefix with a difference at %d = %d", at, got)
		}
		if got := CommonPrefix(long[:at], b[:at+1]); got != at {
			t.Fatalf("CommonPrefix of %d bytes and a longer copy = %d", at, got)
		}
	}
}

func FuzzCommonPrefix(f *testing.F) {
	f.Add([]byte("abc"), []byte("abd"))
	f.Add(make([]byte, 5000), append(make([]byte, 4400), 1))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		want := 0
		for want < len(a) && want < len(b) && a[want] == b[want] {
			want++
		}
		if got := CommonPrefix(a, b); got != want {
			t.Fatalf("CommonPrefix = %d, want %d", got, want)
		}
	})
}

func TestWordByte(t *testing.T) {
	for c := range 256 {
		b := byte(c)
		want := b == '_' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
		if WordByte(b) != want {
			t.Errorf("WordByte(%q) = %v", b, !want)
		}
	}
}
