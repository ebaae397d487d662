package compaction

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rcm-dev/rcm/internal/capture"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
)

// session builds a compact body: a system prompt, then turns of a request,
// an assistant tool call, its result of outBytes bytes and a closing
// assistant text of textBytes bytes. Turn 0 can be the post-compaction recap.
func session(turns, outBytes, textBytes int, recap bool) []byte {
	ms := []chat.Message{chattest.System("You are opencode.")}
	if recap {
		ms = append(ms,
			chattest.User("What did we do so far?"),
			chattest.Assistant("## Task a\n"+strings.Repeat("summary ", 700)),
			chattest.User("Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."))
	}
	for i := range turns {
		id := "call_" + strconv.Itoa(i)
		ms = append(ms,
			chattest.User(fmt.Sprintf("request %d: fix bug %d in pkg/p%d.go ", i, i, i)+strings.Repeat("é", 40)),
			chattest.ToolCall(id, "bash", `{"command":"cat pkg/p.go"}`),
			chattest.ToolResult(id, filler("out", i, outBytes)),
			chattest.Assistant(filler("text", i, textBytes)),
		)
	}
	return chattest.Body(ms...)
}

// filler is n bytes of distinct lines, with multi-byte runes so that cuts
// must respect rune boundaries.
func filler(kind string, i, n int) string {
	var b strings.Builder
	for l := 0; b.Len() < n; l++ {
		fmt.Fprintf(&b, "%s %d line %d: ünïcödé ✓\n", kind, i, l)
	}
	s := b.String()[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

var marker = regexp.MustCompile(`\n\[rcm: cut (\d+) of (\d+) bytes of (tool output|assistant text)\]\n`)

// checkFit verifies what Fit must always guarantee and returns the rebuilt
// body.
func checkFit(t testing.TB, tr *transcript.Transcript, e, out transcript.Edit, rep Report, budget, current int) []byte {
	t.Helper()
	built, err := tr.Rebuild(out)
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if _, err := transcript.Parse(transcript.OpenAIChat, built, transcript.Hints{}); err != nil {
		t.Fatalf("rebuilt body does not parse: %v", err)
	}
	if got := Estimate(len(built)); rep.TokensAfter < got {
		t.Fatalf("TokensAfter %d below the rebuilt body's %d", rep.TokensAfter, got)
	}
	if budget <= 0 || rep.TokensBefore <= budget {
		if !reflect.DeepEqual(out, e) || rep.Condensed+rep.Dropped != 0 {
			t.Fatalf("changed an edit that fits: %+v", rep)
		}
	}
	if !slices.IsSorted(out.Keep) || !isSubset(out.Keep, e.Keep) {
		t.Fatalf("keep %v not an ordered subset of %v", out.Keep, e.Keep)
	}
	inE := set(e.Keep)
	inOut := set(out.Keep)
	for ti, turn := range tr.Turns {
		kept, lost := 0, 0
		for i := turn.Start; i < turn.End; i++ {
			m := &tr.Messages[i]
			if !inE[i] {
				continue
			}
			switch {
			case inOut[i]:
				kept++
			case m.System():
				t.Fatalf("system message %d dropped", i)
			default:
				lost++
			}
			if !inOut[i] {
				continue
			}
			raw := tr.Messages[i].Raw
			if r, ok := e.Replace[i]; ok {
				raw = r
			}
			newRaw := raw
			if r, ok := out.Replace[i]; ok {
				newRaw = r
			}
			if bytes.Equal(raw, newRaw) {
				continue
			}
			if ti >= current || m.Role == "user" || m.System() || turn.Kind == transcript.Summary {
				t.Fatalf("turn %d message %d (%s) changed", ti, i, m.Role)
			}
			text := gjson.GetBytes(newRaw, "content").Str
			sm := marker.FindStringSubmatch(text)
			if sm == nil {
				t.Fatalf("condensed message %d has no marker: %.200q", i, text)
			}
			cutN, _ := strconv.Atoi(sm[1])
			total, _ := strconv.Atoi(sm[2])
			if total != len(m.Text()) || len(text)-len(sm[0])+cutN != total {
				t.Fatalf("marker %q does not add up for %d bytes", sm[0], len(m.Text()))
			}
			if !strings.HasPrefix(m.Text(), text[:strings.Index(text, sm[0])]) || !strings.HasSuffix(m.Text(), text[strings.Index(text, sm[0])+len(sm[0]):]) {
				t.Fatalf("message %d: head or tail not kept verbatim", i)
			}
			if !gjson.ValidBytes(newRaw) || gjson.GetBytes(newRaw, "tool_call_id").Str != m.ToolCallID {
				t.Fatalf("message %d: bad condensed JSON", i)
			}
		}
		if kept > 0 && lost > 0 {
			t.Fatalf("turn %d partly dropped (%d kept, %d lost)", ti, kept, lost)
		}
		if lost > 0 && ti >= current {
			t.Fatalf("turn %d at or after current %d dropped", ti, current)
		}
	}
	return built
}

func set(xs []int) map[int]bool {
	m := make(map[int]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func isSubset(a, b []int) bool {
	in := set(b)
	for _, x := range a {
		if !in[x] {
			return false
		}
	}
	return true
}

func TestFit(t *testing.T) {
	body := session(6, 20000, 6000, true)
	tr := chattest.Parse(t, body)
	if tr.Turns[0].Kind != transcript.Summary || len(tr.Turns) != 7 {
		t.Fatalf("turns %+v", tr.Turns)
	}
	current := len(tr.Turns) - 1
	full := Estimate(len(body))
	memMsg := []byte(`{"role":"user","content":"Task a state (rcm memory)"}`)
	memInsert := []transcript.Insert{{Before: tr.Turns[current].Start, Raw: memMsg}}
	for _, c := range []struct {
		name             string
		e                transcript.Edit
		budget           int
		condensed, drops int
		fits             bool
		keptTurns        []int // turns with kept messages afterwards; nil: all of e's
	}{
		{name: "no limit", e: transcript.Edit{Keep: keepAll(tr)}, budget: 0, fits: true},
		{name: "under budget", e: transcript.Edit{Keep: keepAll(tr)}, budget: full, fits: true},
		{name: "condense two turns", e: transcript.Edit{Keep: keepAll(tr)}, budget: full - 2*(20000+6000-2*(keepHead+keepTail+64))/4 + 1, condensed: 2, fits: true},
		{name: "condense all older", e: transcript.Edit{Keep: keepAll(tr)}, budget: full - 25000, condensed: 5, fits: true},
		{name: "drop oldest requests, summary last", e: transcript.Edit{Keep: keepAll(tr)}, budget: 13000, condensed: 2, drops: 3, fits: true, keptTurns: []int{0, 4, 5, 6}},
		{name: "drop all older requests, summary last", e: transcript.Edit{Keep: keepAll(tr)}, budget: 12000, drops: 5, fits: true, keptTurns: []int{0, 6}},
		{name: "drop everything older", e: transcript.Edit{Keep: keepAll(tr)}, budget: 100, drops: 6, keptTurns: []int{6}},
		{name: "routed subset with memory insert", e: transcript.Edit{Keep: tr.Keep([]int{0, 2, 4, 6}), Insert: memInsert}, budget: 11000, drops: 2, fits: true, keptTurns: []int{0, 6}},
	} {
		t.Run(c.name, func(t *testing.T) {
			keep0, repl0 := slices.Clone(c.e.Keep), maps.Clone(c.e.Replace)
			out, rep := Fit(tr, c.e, c.budget, 0, current)
			if !slices.Equal(keep0, c.e.Keep) || !maps.EqualFunc(repl0, c.e.Replace, bytes.Equal) {
				t.Fatal("Fit modified its input edit")
			}
			built := checkFit(t, tr, c.e, out, rep, c.budget, current)
			if rep.TokensAfter != Estimate(len(built)) {
				t.Errorf("TokensAfter %d, rebuilt body %d", rep.TokensAfter, Estimate(len(built)))
			}
			if before, _ := tr.Rebuild(c.e); rep.TokensBefore != Estimate(len(before)) {
				t.Errorf("TokensBefore %d, body %d", rep.TokensBefore, Estimate(len(before)))
			}
			if rep.Condensed != c.condensed || rep.Dropped != c.drops {
				t.Errorf("condensed %d dropped %d, want %d and %d", rep.Condensed, rep.Dropped, c.condensed, c.drops)
			}
			if fits := c.budget == 0 || rep.TokensAfter <= c.budget; fits != c.fits {
				t.Errorf("fits %v (%d tokens, budget %d)", fits, rep.TokensAfter, c.budget)
			}
			if c.keptTurns != nil {
				inOut := set(out.Keep)
				var got []int
				for ti, turn := range tr.Turns {
					if inOut[turn.Start] {
						got = append(got, ti)
					}
				}
				if !slices.Equal(got, c.keptTurns) {
					t.Errorf("kept turns %v, want %v", got, c.keptTurns)
				}
			}
			if c.e.Insert != nil && !bytes.Contains(built, memMsg) {
				t.Error("inserted message lost")
			}
			again, rep2 := Fit(tr, c.e, c.budget, 0, current)
			if !reflect.DeepEqual(again, out) || rep2 != rep {
				t.Error("not deterministic")
			}
		})
	}
}

func TestFitRespectsReplacedAndCurrent(t *testing.T) {
	body := session(3, 9000, 0, false)
	tr := chattest.Parse(t, body)
	// Turn 0's tool output is already replaced (e.g. by another rewrite):
	// Fit must not cut it again. The current turn (1 here, not the last)
	// and the turns after it stay whole.
	repl := []byte(`{"role":"tool","tool_call_id":"call_0","content":"replaced"}`)
	e := transcript.Edit{Keep: keepAll(tr), Replace: map[int][]byte{3: repl}}
	out, rep := Fit(tr, e, 1000, 0, 1)
	checkFit(t, tr, e, out, rep, 1000, 1)
	if rep.Condensed != 0 || rep.Dropped != 1 {
		t.Errorf("report %+v", rep)
	}
	if _, ok := out.Replace[3]; ok {
		t.Error("replacement of a dropped message kept")
	}
	for i := tr.Turns[1].Start; i < len(tr.Messages); i++ {
		if _, ok := out.Replace[i]; ok || !slices.Contains(out.Keep, i) {
			t.Errorf("message %d of the current or a later turn touched", i)
		}
	}
}

func TestFitBadEdit(t *testing.T) {
	tr := chattest.Parse(t, session(2, 9000, 0, false))
	e := transcript.Edit{Keep: []int{0, 1, 1, 99}}
	if out, rep := Fit(tr, e, 10, 0, 1); !reflect.DeepEqual(out, e) || rep.Condensed+rep.Dropped != 0 {
		t.Errorf("bad edit changed: %+v", rep)
	}
}

func TestFitCaptures(t *testing.T) {
	for _, name := range []string{"tool_result_request", "continue_request", "after_autocompaction_request", "compaction_manual_request"} {
		tr := chattest.Parse(t, capture.Body(t, name))
		e := transcript.Edit{Keep: keepAll(tr)}
		current := len(tr.Turns) - 1
		out, rep := Fit(tr, e, 1, 0, current)
		checkFit(t, tr, e, out, rep, 1, current)
		if rep.Dropped != current {
			t.Errorf("%s: dropped %d of %d older turns", name, rep.Dropped, current)
		}
	}
}

func FuzzFit(f *testing.F) {
	for _, name := range []string{"tool_result_request", "continue_request", "after_autocompaction_request"} {
		f.Add(capture.Body(f, name), 50, 1, uint64(0xff))
	}
	f.Add(session(4, 5000, 4500, true), 3000, 4, uint64(0b10111))
	f.Add(session(3, 4200, 0, false), 2500, 2, uint64(0b11))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]},{"role":"tool","content":5}]}`), 1, 1, uint64(1))
	f.Fuzz(func(t *testing.T, body []byte, budget, current int, mask uint64) {
		tr, err := transcript.Parse(transcript.OpenAIChat, body, transcript.Hints{})
		if err != nil {
			return
		}
		var turns []int
		for ti := range tr.Turns {
			if ti == current || mask&(1<<(ti%64)) != 0 {
				turns = append(turns, ti)
			}
		}
		e := transcript.Edit{Keep: tr.Keep(turns)}
		if len(tr.Turns) > 0 {
			e.Insert = []transcript.Insert{{Before: tr.Turns[len(tr.Turns)-1].Start, Raw: []byte(`{"role":"user","content":"mem"}`)}}
		}
		out, rep := Fit(tr, e, budget%100000, 0, current)
		checkFit(t, tr, e, out, rep, budget%100000, current)
		if rep.Condensed < 0 || rep.Dropped < 0 || rep.Dropped > len(tr.Turns) {
			t.Fatalf("report %+v", rep)
		}
		if !json.Valid(body) {
			t.Fatal("parsed a body that is not JSON")
		}
	})
}

func BenchmarkFit(b *testing.B) {
	body := session(48, 16000, 4000, true) // about 1 MB
	tr := chattest.Parse(b, body)
	e := transcript.Edit{Keep: keepAll(tr)}
	current := len(tr.Turns) - 1
	budget := Estimate(len(body)) / 8 // condenses every older turn, then drops
	if _, rep := Fit(tr, e, budget, 0, current); rep.Condensed == 0 || rep.Dropped == 0 {
		b.Fatalf("benchmark does not exercise both phases: %+v", rep)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for b.Loop() {
		Fit(tr, e, budget, 0, current)
	}
}

// TestFitResponses: a Responses tool output is cut in its "output" (a
// "content" member would make the item invalid); its call, the reasoning
// and every other item stay as sent.
func TestFitResponses(t *testing.T) {
	long := strings.Repeat("line of tool output\n", 2000)
	body := `{"model":"m","input":[{"role":"user","content":"first"},` +
		`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"enc"},` +
		`{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},` +
		`{"type":"function_call_output","call_id":"c1","output":` + strconv.Quote(long) + `},` +
		`{"type":"custom_tool_call_output","call_id":"c2","output":[{"type":"input_text","text":` + strconv.Quote(long) + `}]},` +
		`{"role":"user","content":"second"}]}`
	tr, err := transcript.Parse(transcript.OpenAIResponses, []byte(body), transcript.Hints{})
	if err != nil {
		t.Fatal(err)
	}
	e := transcript.Edit{Keep: keepAll(tr)}
	out, rep := Fit(tr, e, 2000, 0, len(tr.Turns)-1)
	if rep.Condensed != 1 {
		t.Fatalf("report %+v", rep)
	}
	built, err := tr.Rebuild(out)
	if err != nil {
		t.Fatal(err)
	}
	items := gjson.GetBytes(built, "input").Array()
	if len(items) != 6 || items[1].Raw != `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"enc"}` {
		t.Fatalf("items %d: %s", len(items), built)
	}
	for _, i := range []int{3, 4} {
		if items[i].Get("content").Exists() || items[i].Get("output").Type != gjson.String || len(items[i].Raw) >= len(long) || items[i].Get("call_id").Str == "" {
			t.Errorf("item %d condensed to %.200s", i, items[i].Raw)
		}
	}
}

// TestFitSteps: as a conversation grows, the cut moves in steps: most
// calls forward a context whose start repeats the previous call's (a
// provider's prompt cache keeps hitting), where cutting afresh to the
// budget on every call would move the cut, and so break the prefix near
// its start, on every call once over budget.
func TestFitSteps(t *testing.T) {
	const budget, turns = 40000, 40
	var prev []byte
	moves, over := 0, 0
	for n := 1; n <= turns; n++ {
		tr := chattest.Parse(t, session(n, 20000, 6000, false))
		out, rep := Fit(tr, transcript.Edit{Keep: keepAll(tr)}, budget, 0, len(tr.Turns)-1)
		if rep.TokensAfter > budget {
			t.Fatalf("%d turns: %d tokens over budget %d", n, rep.TokensAfter, budget)
		}
		body, err := tr.Rebuild(out)
		if err != nil {
			t.Fatal(err)
		}
		msgs := []byte(gjson.GetBytes(body, "messages").Raw)
		if rep.Dropped > 0 {
			over++
			// Less than half of the previous context repeated: the cut moved.
			if i := commonPrefixLen(prev, msgs); i < len(prev)/2 {
				moves++
			}
		}
		prev = msgs
	}
	if over < 10 || moves == 0 || moves > over/4 {
		t.Errorf("the cut moved on %d of %d calls over budget, want a few steps", moves, over)
	}
}

func commonPrefixLen(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// FuzzCutContent: cutting a chat message's string content from its ends
// gives the bytes the general way gives (decode the whole text, cut it,
// set the member), whatever the escapes and multi-byte runes at the cuts.
func FuzzCutContent(f *testing.F) {
	f.Add("line of tool output\n", 300, "tool")
	f.Add("quote \" back \\ slash / tab\t é € 𝄞\r\n", 200, "assistant")
	f.Add("\\u0041 is an escaped backslash before u", 150, "tool")
	f.Add("\x01\x1f control \u2028", 400, "tool")
	f.Add("short", 10, "tool")
	f.Fuzz(func(t *testing.T, unit string, repeat int, role string) {
		if repeat < 0 || repeat > 5000 || len(unit)*repeat > 1<<20 || !utf8.ValidString(unit) || role != "tool" && role != "assistant" {
			return
		}
		content, _ := json.Marshal(strings.Repeat(unit, repeat))
		body := []byte(`{"model":"m","messages":[{"role":"user","content":"go"},{"role":` + strconv.Quote(role) + `,"content":` + string(content) + `,"tool_call_id":"c1"}]}`)
		tr, err := transcript.Parse(transcript.OpenAIChat, body, transcript.Hints{})
		if err != nil {
			t.Fatal(err)
		}
		m := &tr.Messages[1]
		what := map[string]string{"tool": "tool output", "assistant": "assistant text"}[role]
		got, handled := cutContent(m, what)
		if !handled {
			return // \u escapes: the general way
		}
		var want []byte
		if text := m.Text(); len(text) > longText {
			if want, err = withText(m.Raw, "content", cut(text, what)); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("cut from the ends:\n%.300s\nthe general way:\n%.300s", got, want)
		}
	})
}

// TestFitReserve: a reserve changes only what Fit drops, to the budget less
// the reserve, exactly as fitting again to that smaller budget once turns
// must go (what the proxy did, in two passes, before Fit took a reserve).
func TestFitReserve(t *testing.T) {
	const budget = 40000
	dropped := 0
	for n := 1; n <= 40; n += 3 {
		tr := chattest.Parse(t, session(n, 20000, 6000, false))
		e, cur := transcript.Edit{Keep: keepAll(tr)}, len(tr.Turns)-1
		for _, reserve := range []int{0, 2000, budget / 4} {
			want, wrep := Fit(tr, e, budget, 0, cur)
			if wrep.Dropped > 0 {
				want, wrep = Fit(tr, e, budget-reserve, 0, cur)
				dropped++
			}
			got, rep := Fit(tr, e, budget, reserve, cur)
			if !reflect.DeepEqual(got, want) || rep != wrep {
				t.Fatalf("%d turns, reserve %d: %+v, want %+v", n, reserve, rep, wrep)
			}
		}
	}
	if dropped == 0 {
		t.Fatal("no call dropped turns: the reserve was never exercised")
	}
}
