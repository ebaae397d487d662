package transcript

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tidwall/gjson"
)

// grow repeats the turns of a real OpenCode body until it is about size
// bytes, each tool output padded as in a long session.
func grow(b *testing.B, size int) []byte {
	body, _, _ := load(b, "continue_request")
	msgs := gjson.GetBytes(body, "messages")
	var arr bytes.Buffer
	arr.WriteString("[" + msgs.Get("0").Raw)
	for i := 0; arr.Len() < size; i++ {
		msgs.ForEach(func(k, m gjson.Result) bool {
			if k.Int() > 0 {
				arr.WriteByte(',')
				arr.Write(bytes.Replace([]byte(m.Raw), []byte(`hello-from-tool\n`), []byte(fmt.Sprintf(`output %d %s\n`, i, bytes.Repeat([]byte("x"), 4000))), 1))
			}
			return true
		})
	}
	arr.WriteByte(']')
	out := append([]byte{}, body[:msgs.Index]...)
	out = append(out, arr.Bytes()...)
	return append(out, body[msgs.Index+len(msgs.Raw):]...)
}

func BenchmarkParse1MB(b *testing.B) {
	body := grow(b, 1<<20)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(OpenAIChat, body, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRebuild1MB(b *testing.B) {
	body := grow(b, 1<<20)
	tr, err := Parse(OpenAIChat, body, nil)
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
