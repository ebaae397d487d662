package memory

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/transcript"
)

// FuzzObserve drives arbitrary requests and answers through Observe: it
// never panics, is idempotent (observing the same call again changes
// nothing), its record survives the store's encoding, and what it keeps
// stays within the record's bounds.
func FuzzObserve(f *testing.F) {
	for _, name := range []string{"tool_result_request", "continue_request"} {
		f.Add(capture.Body(f, name), sseReply("done", transcript.ToolCall{ID: "c1", Name: "bash", Arguments: `{"command":"cd /w && go test ./..."}`}), true)
	}
	f.Add([]byte(`{"messages":[{"role":"user","content":"fix it"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"pytest -q\"}"}}]},{"role":"tool","tool_call_id":"a","content":"1 failed in 0.1s\nexit code: 1"},{"role":"user","content":"actually, also fix y"}]}`),
		[]byte(`{"choices":[{"message":{"content":"ok","tool_calls":[{"function":{"name":"todowrite","arguments":"{\"todos\":[{\"content\":\"x\",\"status\":\"pending\"}]}"}}]}}]}`), false)
	f.Fuzz(func(t *testing.T, body, reply []byte, sse bool) {
		tr, err := transcript.Parse(transcript.OpenAIChat, body, transcript.Hints{})
		if err != nil || len(tr.Turns) == 0 {
			return
		}
		o := Observation{Transcript: tr, Turns: allTurns(tr), Response: reply, SSE: sse, Status: 200}
		var r Record
		r.Observe(o)
		once, _ := json.Marshal(r)
		r.Observe(o)
		twice, _ := json.Marshal(r)
		if string(once) != string(twice) {
			t.Fatalf("not idempotent:\n%s\n%s", once, twice)
		}
		var back Record
		if err := json.Unmarshal(once, &back); err != nil {
			t.Fatalf("record does not decode: %v", err)
		}
		if len(r.Requirements) > maxRequirements || len(r.Commands) > maxCommands || len(r.FilesRead) > maxFiles || len(r.FilesChanged) > maxFiles {
			t.Fatalf("record out of bounds: %d requirements, %d commands, %d+%d files",
				len(r.Requirements), len(r.Commands), len(r.FilesRead), len(r.FilesChanged))
		}
	})
}

// FuzzLexShell: whatever the command line, the shell lexer and the
// readers built on it never panic, and the lexer produces no more words
// than the line has bytes (it only splits, never invents).
func FuzzLexShell(f *testing.F) {
	for _, s := range []string{
		"cd /w && go test ./... 2>&1 | tail -5",
		"cat <<'EOF' > a.py\nprint(1)\nEOF\npython a.py",
		`sed -i 's/a/b/' x.go; echo "$(ls | wc -l)" >> log; grep -rn 'x' --include=*.go .`,
		"python - <<EOF\nopen('f.txt','w').write('x')\nEOF",
		`(cd sub; make test) || echo 'fail'; cp a b; mv c d; rm -rf e; tee -a f <<< "g"`,
		"echo 'unterminated",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words := 0
		for _, c := range lexShell(s) {
			words += len(c.args) + len(c.out) + len(c.in)
		}
		if words > len(s) {
			t.Fatalf("%d words from %d bytes", words, len(s))
		}
		e := bashEffects(s, "/work")
		for _, p := range append(append(e.read, e.changed...), e.dirs...) {
			if strings.ContainsRune(p, 0) && !strings.ContainsRune(s, 0) {
				t.Fatalf("path %q not from %q", p, s)
			}
		}
		isTest(s)
		oneLine(s, maxCommand)
	})
}
