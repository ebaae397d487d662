package scripted

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkStream measures one streamed answer (1 KiB of text and a tool
// call) to OpenCode's first agent call, recording included: the fake must
// not be what a bench replay waits on.
func BenchmarkStream(b *testing.B) {
	req := loadCapture(b, "first_agent_request.json").Body
	s := New(Script{Default: Reply{
		Text:      strings.Repeat("word ", 205),
		ToolCalls: []ToolCall{{Name: "edit", Arguments: `{"filePath":"{{workdir}}/a.go","oldString":"a - b","newString":"a + b"}`}},
	}})
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(req)))
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
		s.Reset()
	}
}
