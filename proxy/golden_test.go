package proxy

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

var update = flag.Bool("update", false, "rewrite golden files")

// forwardSession sends the calls of a three-turn, two-task session (with a
// second call inside the last turn) through a fresh rcm in mode, and
// returns what the upstream received for each call.
func forwardSession(t *testing.T, mode string) [][]byte {
	t.Helper()
	rec := &recorder{}
	srv, _ := setup(t, rec, nil)
	reqs, dirs := switchRequests, switchDirs
	hdr := http.Header{"X-Session-Id": {"ses_golden"}, "X-Rcm-Mode": {mode}}
	var bodies [][]byte
	send := func(body []byte) {
		resp := post(t, srv.URL+"/v1/chat/completions", body, hdr)
		io.Copy(io.Discard, resp.Body)
		got, _ := rec.last(t)
		bodies = append(bodies, got)
	}
	for n := 1; n <= len(reqs); n++ {
		send(sessionBody(t, reqs[:n], dirs))
	}
	last, _ := sjson.SetRawBytes(sessionBody(t, reqs, dirs), "messages.-1",
		[]byte(`{"role":"assistant","content":"","tool_calls":[{"id":"call_0","type":"function","function":{"name":"bash","arguments":"{\"command\":\"python -m pytest tests/queries\",\"workdir\":\"/work/ws1\"}"}}]}`))
	last, _ = sjson.SetRawBytes(last, "messages.-1", []byte(`{"role":"tool","tool_call_id":"call_0","content":"2 passed"}`))
	send(last)
	return bodies
}

// TestForwardedGolden: the same requests on the same store state forward
// the same bytes (DESIGN's determinism invariant, which golden tests rely
// on), and what each mode forwards matches its golden summary.
func TestForwardedGolden(t *testing.T) {
	for _, mode := range []string{"native", "router", "rcm"} {
		t.Run(mode, func(t *testing.T) {
			a, b := forwardSession(t, mode), forwardSession(t, mode)
			for i := range a {
				if string(a[i]) != string(b[i]) {
					t.Fatalf("call %d: two runs on fresh stores forwarded different bytes", i)
				}
			}
			checkGolden(t, "forwarded_"+mode+".golden", a)
		})
	}
}

// checkGolden compares a summary of forwarded bodies (a hash of each, and
// each message's role and the start of its text) with testdata/name.
func checkGolden(t *testing.T, name string, bodies [][]byte) {
	t.Helper()
	var sum strings.Builder
	for i, body := range bodies {
		fmt.Fprintf(&sum, "call %d sha256=%x\n", i, sha256.Sum256(body))
		gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
			text := m.Get("content").String()
			if len(text) > 70 {
				text = text[:70] + "..."
			}
			fmt.Fprintf(&sum, "  %s %q\n", m.Get("role").String(), text)
			return true
		})
	}
	golden := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(golden, []byte(sum.String()), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if sum.String() != string(want) {
		t.Errorf("forwarded bodies differ from %s (go test ./proxy -run Golden -update):\n%s", golden, sum.String())
	}
}
