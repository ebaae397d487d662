package transcript

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"unsafe"

	"github.com/rcm-dev/rcm/internal/capture"
)

// grown returns the bodies of a session growing one message at a time up
// to body: its first k messages for each k, in order, each body a byte
// prefix of the next one up to its last message.
func grown(tb testing.TB, f Format, body []byte) [][]byte {
	tb.Helper()
	t, err := Parse(f, body, Hints{})
	if err != nil || len(t.Messages) == 0 || body[t.arrStart] != '[' {
		return nil
	}
	var out [][]byte
	for k := 1; k <= len(t.Messages); k++ {
		var b bytes.Buffer
		b.Write(body[:t.arrStart+1])
		for i, m := range t.Messages[:k] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(m.Raw)
		}
		b.WriteByte(']')
		b.Write(body[t.arrEnd:])
		out = append(out, b.Bytes())
	}
	return out
}

// captures returns every captured model call of the three clients that
// has a messages array, with its format.
func captures(tb testing.TB) (bodies [][]byte, formats []Format) {
	for _, dir := range []string{capture.Dir(), capture.ClaudeCodeDir(), filepath.Join(capture.Dir(), "..", "codex")} {
		for _, name := range capture.NamesIn(tb, dir) {
			r := capture.LoadIn(tb, dir, name)
			if f, call := FormatOf(r.Path); call && r.Body != nil {
				bodies, formats = append(bodies, r.Body), append(formats, f)
			}
		}
	}
	return bodies, formats
}

// sameParse reports whether a cached parse holds what a whole one does
// (the bytes it took over apart).
func sameParse(cached, whole *Transcript) bool {
	c := *cached
	c.reused = whole.reused
	return reflect.DeepEqual(&c, whole)
}

// inside reports whether s is a span of b.
func inside(s string, b []byte) bool {
	if len(s) == 0 || len(b) == 0 {
		return false
	}
	p, o := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= o && p < o+uintptr(len(b))
}

// strs lists the strings of m that may be spans of its body, Raw's bytes
// as one.
func strs(m *Message) []string {
	out := []string{m.Role, m.ToolCallID, m.content, m.text, unsafe.String(unsafe.SliceData(m.Raw), len(m.Raw))}
	for _, c := range m.ToolCalls {
		out = append(out, c.ID, c.Name, c.Arguments)
	}
	for _, r := range m.Results {
		out = append(out, r.ID, r.content)
	}
	return out
}

// TestCacheMatchesParse: through a Cache, each call of a session growing
// one message at a time (every captured request of the three clients,
// rebuilt message by message) parses to exactly what Parse gives, takes
// the earlier messages over, and keeps no earlier body alive.
func TestCacheMatchesParse(t *testing.T) {
	bodies, formats := captures(t)
	sessions, reused := 0, 0
	for n, body := range bodies {
		seq := grown(t, formats[n], body)
		if len(seq) < 2 {
			continue
		}
		sessions++
		c := NewCache(64 << 20)
		key := fmt.Sprint("s", n)
		var prev []byte
		for k, b := range seq {
			got, err := c.Parse(key, formats[n], b, Hints{})
			want, werr := Parse(formats[n], b, Hints{})
			if err != nil || werr != nil {
				t.Fatalf("capture %d, %d messages: %v / %v", n, k+1, err, werr)
			}
			if !sameParse(got, want) {
				t.Fatalf("capture %d, %d messages: the cached parse differs from Parse", n, k+1)
			}
			for i := range got.Messages {
				for _, s := range strs(&got.Messages[i]) {
					if inside(s, prev) {
						t.Fatalf("capture %d, %d messages: message %d keeps the previous body alive (%.40q)", n, k+1, i, s)
					}
				}
			}
			if got.Reused() > 0 {
				reused++
			}
			prev = b
		}
	}
	if sessions < 10 || reused < 50 {
		t.Fatalf("%d sessions, %d calls took messages over: the captures no longer exercise the cache", sessions, reused)
	}
}

// TestCacheKeepsBudget: past its budget the Cache lets the least recently
// used sessions go, and side calls never take a session's place.
func TestCacheKeepsBudget(t *testing.T) {
	body := capture.Load(t, "continue_request").Body
	c := NewCache(2*len(body) + 1)
	for _, k := range []string{"a", "b", "c"} {
		if _, err := c.Parse(k, OpenAIChat, body, Hints{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := c.last["a"]; ok || len(c.last) != 2 || c.bytes != 2*len(body) {
		t.Fatalf("kept %d sessions, %d bytes; want b and c", len(c.last), c.bytes)
	}
	title := capture.Load(t, "title_request").Body
	if _, err := c.Parse("b", OpenAIChat, title, Hints{}); err != nil {
		t.Fatal(err)
	}
	if el := c.last["b"]; el == nil || !bytes.Equal(el.Value.(*cached).t.Body, body) {
		t.Fatal("a title call replaced the session's history")
	}
}

// FuzzCache: whatever a session sent before, a body parses through the
// Cache exactly as Parse parses it, error included.
func FuzzCache(f *testing.F) {
	bodies, formats := captures(f)
	for n, body := range bodies {
		if seq := grown(f, formats[n], body); len(seq) >= 2 {
			f.Add(uint8(formats[n]), seq[len(seq)-2], seq[len(seq)-1])
			f.Add(uint8(formats[n]), seq[len(seq)-1], seq[0]) // the session shrank
		}
	}
	f.Add(uint8(OpenAIChat), []byte(`{"messages":[{"role":"user","content":"a"}]}`), []byte(`{"messages":[{"role":"user","content":"a"},{"role":"assistant"},]}`))
	f.Add(uint8(OpenAIChat), []byte(`{"messages":[{"role":"user","content":"a"}]}`), []byte(`{"messages":[{"role":"user","content":"a"},3]}`))
	f.Add(uint8(OpenAIChat), []byte(`{"messages":[{"role":"user","content":"a"}]}`), []byte(`{"messages":[{"role":"user","content":"a"}],"messages":1,}`))
	f.Fuzz(func(t *testing.T, format uint8, first, second []byte) {
		fm := Format(format % uint8(len(adapters)+1))
		if adapters[fm] == nil {
			return
		}
		c := NewCache(1 << 20)
		c.Parse("s", fm, first, Hints{})
		got, err := c.Parse("s", fm, second, Hints{})
		want, werr := Parse(fm, second, Hints{})
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("cache: %v, Parse: %v", err, werr)
		}
		if err == nil && !sameParse(got, want) {
			t.Fatal("the cached parse differs from Parse")
		}
	})
}

// TestCacheConcurrent: calls of one session parsed at once, as a harness's
// title call runs beside its agent call, each get what Parse gives (run
// with -race).
func TestCacheConcurrent(t *testing.T) {
	body := capture.Load(t, "continue_request").Body
	seq := grown(t, OpenAIChat, body)
	c := NewCache(len(body) * 4) // small: sessions are let go while in use
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k, b := range seq {
				got, err := c.Parse(fmt.Sprint("s", (g+k)%3), OpenAIChat, b, Hints{})
				want, _ := Parse(OpenAIChat, b, Hints{})
				if err != nil || !sameParse(got, want) {
					t.Errorf("goroutine %d, %d messages: %v", g, k+1, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
