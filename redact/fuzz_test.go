package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzString checks that redaction never panics, is idempotent, leaves no
// findable secret, and removes every token it matched (unless the same
// text also stands elsewhere where it is not a token, e.g. glued to a
// word); and that redacting JSON-encoded text keeps it valid JSON.
func FuzzString(f *testing.F) {
	for _, s := range []string{
		"export OPENAI_API_KEY=" + openaiLegacy, anthropicKey, githubPAT, githubFine, gitlabPAT, slackBot,
		npmToken, awsKeyIDs + " " + awsSecretKey, jwtToken, pemKey, opensshKey,
		"Authorization: Bearer " + openaiProj, "password='a b' secret=\"c\"", "https://u:p@h/x",
		"-----BEGIN PRIVATE KEY-----\\nMIIE\\n", `\"password\": \"x\"`, "\\nsk-proj-0123456789abcdefghij",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := String(s)
		if again := String(out); again != out {
			t.Fatalf("not idempotent:\n in %q\nout %q\nagain %q", s, out, again)
		}
		if fs := Find(out); len(fs) > 0 {
			t.Fatalf("secret left in %q: %+v", out, fs)
		}
		matched := map[string]int{}
		for _, f := range Find(s) {
			switch f.Kind {
			case OpenAI, Anthropic, GitHub, GitLab, Slack, NPM, AWSAccessKey, JWT, PrivateKey:
				matched[s[f.Start:f.End]]++
			}
		}
		for secret, n := range matched {
			if strings.Count(s, secret) == n && strings.Contains(out, secret) {
				t.Fatalf("secret %q survives in %q", secret, out)
			}
		}
		raw, err := json.Marshal(s)
		if err != nil {
			return
		}
		var back string
		if err := json.Unmarshal(Bytes(raw), &back); err != nil {
			t.Fatalf("redacted JSON of %q does not decode: %v", s, err)
		}
	})
}

func BenchmarkString(b *testing.B) {
	// A typical stored record: prose, commands, paths, one secret.
	text := strings.Repeat("Fix the failing test in pkg/server/handler_test.go; run `go test ./... -run TestServe` and "+
		"check the output of curl -s http://localhost:8080/api/v1/items?page=2 against the spec. ", 100) +
		"export OPENAI_API_KEY=" + openaiLegacy
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		String(text)
	}
}

func BenchmarkBytesClean(b *testing.B) {
	raw, _ := json.Marshal(map[string]any{"text": strings.Repeat("read src/app/main.py, edited tests/test_app.py; all 31 tests passed. ", 200)})
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		Bytes(raw)
	}
}
