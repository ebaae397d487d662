package transcript

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestContentText pins the one rule by which requests and replies read a
// content field: a string, or the text parts of an array (string parts and
// parts with a string "text"), joined by "\n"; anything else has no text.
// Replies read objects, numbers, string parts and non-string "text"
// members differently before (contentString).
func TestContentText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`"fix it"`, "fix it"},
		{`null`, ""},
		{`5`, ""},
		{`{"text":"x"}`, ""},
		{`[]`, ""},
		{`["a","b"]`, "a\nb"},
		{`[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}},{"type":"output_text","text":"b"}]`, "a\nb"},
		{`[{"type":"refusal","refusal":"no"},{"type":"input_text","text":"c"}]`, "c"},
		{`[{"text":null},{"text":5},{"text":"a"}]`, "a"},
		{`[{"text":"a"},{"text":""},{"text":"b"}]`, "a\n\nb"},
	} {
		if got := contentText(gjson.Parse(c.in)); got != c.want {
			t.Errorf("contentText(%s) = %q, want %q", c.in, got, c.want)
		}
	}
	// A reply reads its content by the same rule.
	m, ok := OpenAIChat.ParseReply([]byte(`{"choices":[{"message":{"role":"assistant","content":["a",{"type":"text","text":"b"}]}}]}`), false)
	if !ok || m.Text() != "a\nb" {
		t.Errorf("chat reply text %q ok %v", m.Text(), ok)
	}
}
