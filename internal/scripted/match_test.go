package scripted

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
)

// fullCall is what readChat must find, read the long way: the whole body
// parsed by the transcript package and every message's text decoded, as
// the other APIs' calls are read.
func fullCall(body []byte, h http.Header) Call {
	return readParsed(transcript.OpenAIChat, body, h)
}

// TestReadCallReadsWhatTheFullParseReads: readChat decodes only the
// messages rules look at; on every OpenCode capture, a long session and
// edge cases it finds what parsing the whole body finds.
func TestReadCallReadsWhatTheFullParseReads(t *testing.T) {
	type tc struct {
		name string
		body []byte
		h    http.Header
	}
	var cases []tc
	for _, n := range capture.Names(t) {
		c := capture.Load(t, n)
		cases = append(cases, tc{n, c.Body, c.Header})
	}
	sys := `{"role":"system","content":"You are a title generator. Working directory: /w"}`
	agent := `{"role":"system","content":[{"type":"text","text":"You are a test agent.\nWorking directory: /a"}]}`
	for _, c := range []struct{ name, body string }{
		{"later system prompt is not leading", `{"messages":[` + agent + `,{"role":"user","content":"x"},` + sys + `]}`},
		{"title", `{"stream":true,"stream_options":{"include_usage":true},"messages":[` + sys + `,{"role":"user","content":"x"}]}`},
		{"only system", `{"messages":[` + sys + `]}`},
		{"developer and content parts", `{"messages":[{"role":"developer","content":"d"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":"out \u003c"}]}`},
		{"tool of an earlier turn", `{"messages":[{"role":"user","content":"a"},{"role":"tool","content":"t"},{"role":"user","content":"b"}]}`},
		{"no user", `{"messages":[{"role":"assistant","content":"a"},{"role":"tool","content":"t"}]}`},
		{"bad message", `{"model":"m","messages":[{"role":"user","content":"a"},3]}`},
		{"role not a string", `{"messages":[{"role":1}]}`},
		{"no messages", `{"model":"m","messages":"no"}`},
		{"empty", `{}`},
		{"not an object", `[1]`},
	} {
		cases = append(cases, tc{c.name, []byte(c.body), nil})
	}
	cases = append(cases, tc{"long session", capture.Grow(t, 1<<20), http.Header{"X-Parent-Session-Id": {"ses_p"}}})
	for _, c := range cases {
		if got, want := readChat(c.body, c.h), fullCall(c.body, c.h); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, want)
		}
	}
}

// BenchmarkReadCall: what the rules see of a 1 MB session body; the bench
// replay sends tens of thousands of such bodies.
func BenchmarkReadCall(b *testing.B) {
	body := capture.Grow(b, 1<<20)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		readChat(body, nil)
	}
}

func BenchmarkReadCallFull(b *testing.B) {
	body := capture.Grow(b, 1<<20)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		fullCall(body, nil)
	}
}

func FuzzReadCall(f *testing.F) {
	f.Add([]byte(`{"model":"m","stream":true,"messages":[{"role":"system","content":"You are a title generator"},{"role":"user","content":"x"},{"role":"tool","content":"y"}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"system","content":"s"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if !gjson.ValidBytes(body) { // the server answers 400 first
			return
		}
		if got, want := readChat(body, nil), fullCall(body, nil); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", body, got, want)
		}
	})
}
