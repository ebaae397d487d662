package router

import (
	"context"
	"math"
	"testing"

	"github.com/rcm-dev/rcm/transcript"
)

// FuzzRequestFeatures: the readers of a request's text (tag, artifact,
// the word classes, pasted content, a title, numbered items) take any text.
func FuzzRequestFeatures(f *testing.F) {
	for _, s := range []string{"[task: a] x", "[task:", "[TASK : b]", "/review", "yes please", "<command-name>/x</command-name>",
		"step 3", "Traceback (most recent call last):\n  File \"x.py\", line 1", "这个不行", "1.\n2.", "\xff\xfe"} {
		f.Add(s, "1. first\n2) second\nStep 3: third?")
	}
	f.Fuzz(func(t *testing.T, s, answer string) {
		if tag := writtenTag(s); tag != "" && !validName(tag) {
			t.Fatalf("writtenTag(%q) = invalid %q", s, tag)
		}
		artifact(s)
		opensWithReply(s)
		pointsBack(s)
		if p := pasted(s); p < 0 || p > 1 {
			t.Fatalf("pasted(%q) = %v", s, p)
		}
		namesItem(s, answer)
		titled(s)
	})
}

func FuzzScan(f *testing.F) {
	for _, s := range []string{`{"command":"cd /work/ws3 && ls","workdir":"/work/ws3"}`, "/home/u/p/x.go", "//x", `a\`, "/a//b/c", "x.py."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var r roots
		f := &frame{cwd: "/work"}
		scan(s, f, &r)
		for _, p := range r.all {
			if ws, rel := f.place(p); len(ws) > len(p) || len(rel) > len(p) {
				t.Fatalf("workspace %q, rel %q of %q", ws, rel, p)
			}
		}
	})
}

// FuzzRoute: any chat body the transcript package accepts routes without
// panicking, with one decision per turn and keep indexes in range.
func FuzzRoute(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"system","content":"s"},{"role":"user","content":"in /work/ws1 fix x"},{"role":"assistant","content":"","tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":"{\"workdir\":\"/work/ws2\"}"}}]},{"role":"tool","tool_call_id":"a","content":"ok"},{"role":"user","content":"yes"}]}`), uint8(1))
	f.Add([]byte(`{"messages":[{"role":"user","content":"[task: a] x"},{"role":"user","content":"What did we do so far?"},{"role":"assistant","content":"s"}]}`), uint8(0))
	f.Add([]byte(`{"messages":[{"role":"system","content":"Working directory: /tmp
"},{"role":"user","content":"日期解析器：支持时区"},{"role":"assistant","content":"ok"},{"role":"user","content":"Кэш LRU: добавь тесты"},{"role":"assistant","content":"ok"},{"role":"user","content":"修复日期解析器的时区错误"}]}`), uint8(2))
	r := mustNew(f, Config{})
	f.Fuzz(func(t *testing.T, body []byte, known uint8) {
		tr, err := transcript.Parse(transcript.OpenAIChat, body, transcript.Hints{})
		if err != nil {
			return
		}
		prior := make([]Prior, min(int(known)%4, len(tr.Turns)))
		for i := range prior {
			prior[i] = Prior{Known: true, Task: "t1", Confidence: 0.9, Routed: i%2 == 0}
		}
		p, err := r.Route(context.Background(), tr, prior, Options{})
		if err != nil {
			return
		}
		if len(p.Turns) != len(tr.Turns) || len(p.Keep) == 0 || p.Keep[len(p.Keep)-1] != len(tr.Turns)-1 {
			t.Fatalf("plan %+v for %d turns", p, len(tr.Turns))
		}
		for i, d := range p.Turns {
			if math.IsNaN(d.Confidence) || math.IsInf(d.Confidence, 0) || d.Confidence < 0 || d.Confidence > 1 {
				t.Fatalf("turn %d: confidence %v", i, d.Confidence)
			}
		}
		if p.Fallback != (p.Current.Confidence < r.cfg.Threshold) {
			t.Fatalf("fallback %v at confidence %v, threshold %v", p.Fallback, p.Current.Confidence, r.cfg.Threshold)
		}
	})
}
