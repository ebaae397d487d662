package overhead

import (
	"io"
	"net/http"
)

// answer is a short streamed chat completion: the upstream's own cost stays
// near zero, so what a target adds is what is measured.
var answer = []string{
	`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Done"}}]}`,
	`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":": the test passes."},"finish_reason":"stop"}]}`,
	`{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":6,"total_tokens":1006}}`,
}

// Upstream is a fast model API: it reads the whole request and streams a
// short answer, flushing every event as a real provider does.
func Upstream() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		f, _ := w.(http.Flusher)
		for _, ev := range answer {
			io.WriteString(w, "data: "+ev+"\n\n")
			if f != nil {
				f.Flush()
			}
		}
		io.WriteString(w, "data: [DONE]\n\n")
	})
}
