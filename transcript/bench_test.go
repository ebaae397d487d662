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
