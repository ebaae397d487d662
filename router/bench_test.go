package router

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/transcript"
)

// openCodeBody builds an OpenCode-style body of about size bytes: the system
// prompt and tools of a real OpenCode capture, then turns of five tasks
// interleaved, each turn a request and six tool calls with results of
// lines lines (24: 2 KiB).
func openCodeBody(b *testing.B, size, lines int) []byte {
	var ms []chat.Message
	total := len(capture.Body(b, "first_agent_request"))
	output := strings.Repeat("django/db/models/query.py:1021: def _filter_or_exclude(self, negate, *args, **kwargs):\n", lines)
	add := func(m chat.Message) {
		r, _ := json.Marshal(m)
		ms = append(ms, m)
		total += len(r)
	}
	for n := 0; total < size; n++ {
		ws := fmt.Sprintf("/work/ws%d", n%5+1)
		add(chattest.User(fmt.Sprintf("Stage %d of the issue in %s: QuerySet.none() on combined queries returns all results; "+
			"keep the union semantics, add a regression test in tests/queries/test_qs_combinators.py and run it.", n/5+1, ws)))
		for k := 0; k < 6; k++ {
			id := fmt.Sprintf("call_%d_%d", n, k)
			if k%2 == 0 {
				add(chattest.ToolCall(id, "bash", map[string]string{"command": "grep -n none django/db/models/query.py", "workdir": ws}))
			} else {
				add(chattest.ToolCall(id, "read", map[string]string{"filePath": ws + "/django/db/models/sql/query.py"}))
			}
			add(chattest.ToolResult(id, output))
		}
	}
	add(chattest.User(strings.Repeat("The union of the two querysets should stay empty when none() is applied; check combinator handling. ", 10)))
	return chattest.OpenCodeBody(b, ms...)
}

// BenchmarkRoute: one call whose earlier turns are labelled in the store
// and whose current turn is new, without the model classifier.
func BenchmarkRoute(b *testing.B) {
	for _, c := range []struct{ size, lines int }{{256 << 10, 24}, {1 << 20, 24}, {4 << 20, 24}, {1 << 20, 4}} {
		// 1 MiB of 4-line results is the case: about 250 turns.
		b.Run(fmt.Sprintf("%dKiB-%dlines", c.size>>10, c.lines), func(b *testing.B) {
			body := openCodeBody(b, c.size, c.lines)
			tr, err := transcript.Parse(transcript.OpenAIChat, body, transcript.Hints{})
			if err != nil {
				b.Fatal(err)
			}
			r := mustNew(b, Config{})
			p, err := r.Route(context.Background(), tr, nil, Options{}) // cold: label the history
			if err != nil {
				b.Fatal(err)
			}
			prior := make([]Prior, len(tr.Turns)-1)
			for i := range prior {
				prior[i] = p.Turns[i].prior()
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := r.Route(context.Background(), tr, prior, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(tr.Turns)), "turns")
		})
	}
}
