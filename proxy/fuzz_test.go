package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rcm-dev/rcm/transcript"
)

// panicLog records the pipeline's error-level logs (panics it recovered).
type panicLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *panicLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelError }
func (l *panicLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	l.msgs = append(l.msgs, b.String())
	return nil
}
func (l *panicLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *panicLog) WithGroup(string) slog.Handler      { return l }

// FuzzAssemble sends arbitrary bodies through the rcm-mode pipeline (parse,
// route, record message, budget): it must never panic (the recovery would
// hide it, so the log is checked) and whatever it forwards must parse.
func FuzzAssemble(f *testing.F) {
	for _, name := range []string{"continue_request", "tool_result_request", "after_autocompaction_request", "compaction_manual_request"} {
		body, _, _ := load(f, name)
		f.Add(body)
	}
	f.Add([]byte(`{"messages":[{"role":"user","content":"[task: a] in /work/ws1 fix x"},{"role":"assistant","content":"","tool_calls":[{"id":"1","function":{"name":"bash","arguments":"{\"workdir\":\"/work/ws2\"}"}}]},{"role":"user","content":"yes please"}]}`))
	// One store per fuzzing process (workers run this setup too).
	dir, err := os.MkdirTemp("", "rcm-fuzz-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	cfg := Config{Upstream: "http://127.0.0.1:9/v1", DB: filepath.Join(dir, "rcm.db"), ContextTokens: 3000}
	if err := cfg.Validate(); err != nil {
		f.Fatal(err)
	}
	log := &panicLog{}
	h, err := New(cfg, slog.New(log))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { h.Close() })
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
		r.Header.Set("X-Session-Id", "ses_fuzz")
		h.after.Add(1)
		a := h.assemble(r, transcript.OpenAIChat, RCM, 0.8, body)
		a.call.Run(func() {}, h.after.Done)
		log.mu.Lock()
		msgs := log.msgs
		log.mu.Unlock()
		if len(msgs) > 0 {
			t.Fatalf("pipeline error: %s", msgs[0])
		}
		if a.transcript == nil || string(a.body) == string(body) {
			return
		}
		if _, err := transcript.Parse(transcript.OpenAIChat, a.body, transcript.Hints{}); err != nil {
			t.Fatalf("forwarded a body that does not parse (%v):\n%s", err, a.body)
		}
	})
}
