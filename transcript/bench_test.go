package transcript

import (
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
)

func BenchmarkParse1MB(b *testing.B) {
	body := capture.Grow(b, 1<<20)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(OpenAIChat, body, Hints{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse1MBNext parses through a Cache the next call of a session
// whose previous call sent the same history less its last message.
func BenchmarkParse1MBNext(b *testing.B) {
	body := capture.Grow(b, 1<<20)
	seq := grown(b, OpenAIChat, body)
	prev, next := seq[len(seq)-2], seq[len(seq)-1]
	b.SetBytes(int64(len(next)))
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		c := NewCache(64 << 20)
		if _, err := c.Parse("s", OpenAIChat, prev, Hints{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := c.Parse("s", OpenAIChat, next, Hints{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRebuild1MB(b *testing.B) {
	body := capture.Grow(b, 1<<20)
	tr, err := Parse(OpenAIChat, body, Hints{})
	if err != nil {
		b.Fatal(err)
	}
	half := make([]int, 0, len(tr.Turns)/2)
	for i := 0; i < len(tr.Turns); i += 2 {
		half = append(half, i)
	}
	kept := tr.Keep(half)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.Rebuild(Edit{Keep: kept}); err != nil {
			b.Fatal(err)
		}
	}
}
