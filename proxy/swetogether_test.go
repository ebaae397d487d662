package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/internal/ci"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// sweTogetherDir holds real Claude Code sessions in Anthropic block format,
// one task each, from the team's shared data.
const sweTogetherDir = "../../shared/data/sessions/swe-together"

// sweTogetherCalls turns a session ({session_id, messages[{role,
// content}]}, one entry per block as Claude Code logs them) into the calls
// Claude Code made: one per user entry, its body the history up to there
// as Claude Code sends it (consecutive entries of a role merged into one
// message), on the first_agent capture's system, tools and fields.
func sweTogetherCalls(t *testing.T, file string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	base := capture.LoadIn(t, capture.ClaudeCodeDir(), "first_agent_request").Body
	type msg struct {
		role   string
		blocks []string
		text   string // the content when it is one string
	}
	var ms []msg
	var calls [][]byte
	for _, e := range s.Messages {
		c := gjson.ParseBytes(e.Content)
		var blocks []string
		if c.Type == gjson.String {
			blocks = []string{`{"type":"text","text":` + c.Raw + `}`}
		} else {
			for _, bl := range c.Array() {
				blocks = append(blocks, bl.Raw)
			}
		}
		if n := len(ms); n > 0 && ms[n-1].role == e.Role {
			ms[n-1].blocks, ms[n-1].text = append(ms[n-1].blocks, blocks...), ""
		} else {
			m := msg{role: e.Role, blocks: blocks}
			if c.Type == gjson.String {
				m.text = c.Raw
			}
			ms = append(ms, m)
		}
		if e.Role != "user" {
			continue
		}
		var arr []string
		for _, m := range ms {
			content := m.text
			if content == "" {
				content = "[" + strings.Join(m.blocks, ",") + "]"
			}
			arr = append(arr, `{"role":"`+m.role+`","content":`+content+`}`)
		}
		body, err := sjson.SetRawBytes(base, "messages", []byte("["+strings.Join(arr, ",")+"]"))
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, body)
	}
	return calls
}

// TestSWETogetherReplay replays the real Claude Code sessions through
// /v1/messages in every mode: each session is one task, so no call may be
// routed to another task than its first (0 false switches); every body
// forwarded is a valid request with the other fields unchanged; native
// forwards the bytes.
func TestSWETogetherReplay(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(sweTogetherDir, "*.json"))
	if len(files) == 0 {
		ci.Missing(t, "no sessions in %s (the team's shared data)", sweTogetherDir)
	}
	for _, mode := range []string{"native", "router", "rcm"} {
		rec := &recorder{answer: sseReply(t, "fake_reply_text.sse.txt")}
		srv, h := setup(t, rec, nil)
		calls, switches, fallbacks := 0, 0, 0
		for _, f := range files {
			hdr := http.Header{"X-Claude-Code-Session-Id": {filepath.Base(f) + "-" + mode}, "X-Rcm-Mode": {mode}}
			first := ""
			for i, body := range sweTogetherCalls(t, f) {
				resp := post(t, srv.URL+"/v1/messages?beta=true", body, hdr)
				io.Copy(io.Discard, resp.Body)
				h.after.Wait()
				got, _ := rec.last(t)
				calls++
				if mode == "native" {
					if string(got) != string(body) {
						t.Fatalf("%s call %d: native changed the body", f, i)
					}
					continue
				}
				if err := checkMessages(got); err != nil {
					t.Fatalf("%s %s call %d: %v", mode, filepath.Base(f), i, err)
				}
				if err := sameOutsideMessages(got, body); err != nil {
					t.Fatalf("%s %s call %d: %v", mode, filepath.Base(f), i, err)
				}
				switch fb, task := resp.Header.Get(HeaderFallback), resp.Header.Get(HeaderTask); {
				case fb == FallbackError:
					t.Fatalf("%s %s call %d: failed open", mode, filepath.Base(f), i)
				case fb == FallbackThreshold:
					fallbacks++
				case first == "":
					first = task
				case task != first:
					switches++
					t.Errorf("%s %s call %d: switched to %q from %q", mode, filepath.Base(f), i, task, first)
				}
			}
			if mode != "native" && first == "" {
				t.Errorf("%s %s: no call routed to a task", mode, filepath.Base(f))
			}
		}
		t.Logf("%s: %d sessions, %d calls, %d false switches, %d threshold fallbacks", mode, len(files), calls, switches, fallbacks)
	}
}
