package memory

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/rcm-dev/rcm/transcript"
)

func decodeMessage(t *testing.T, msg []byte) (role, content string) {
	t.Helper()
	var m struct{ Role, Content string }
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("message %q is not a chat message: %v", msg, err)
	}
	return m.Role, m.Content
}

func TestMessage(t *testing.T) {
	r := renderRecord()
	r.Task = `t"1<`
	msg := Message(r, Others{}, 0)
	if !bytes.Equal(msg, Message(r, Others{}, 0)) {
		t.Error("the same record gave different bytes")
	}
	if bytes.Contains(msg, []byte(`\u003c`)) {
		t.Errorf("HTML-escaped: %s", msg)
	}
	role, content := decodeMessage(t, msg)
	if role != "user" {
		t.Errorf("role %q", role)
	}
	head := `<rcm-task-state task="t&#34;1&lt;">` + "\n" + preface + "\n"
	if !strings.HasPrefix(content, head) || !strings.HasSuffix(content, "\n</rcm-task-state>") {
		t.Errorf("content not wrapped:\n%s", content)
	}
	if got := strings.TrimSuffix(strings.TrimPrefix(content, head), "</rcm-task-state>"); got != Render(r, 0) {
		t.Errorf("body is not Render(r):\n%s", got)
	}
	for _, q := range r.Requirements {
		if first, _, _ := strings.Cut(q.Text, "\n"); !strings.Contains(content, first) {
			t.Errorf("requirement %q missing", q.Text)
		}
	}
}

func TestMessageBounded(t *testing.T) {
	r := renderRecord()
	// Quotes and newlines grow under JSON escaping.
	r.Requirements = append(r.Requirements, Requirement{Text: strings.Repeat("\"q\"\n", 300)})
	full := Message(r, Others{}, 0)
	for _, tokens := range []int{1, 10, 50, 100, 200, 400, 1000, 100000} {
		msg := Message(r, Others{}, tokens)
		_, content := decodeMessage(t, msg)
		if len(msg) > tokens*4 && tokens >= 100 {
			t.Errorf("%d tokens: %d bytes", tokens, len(msg))
		}
		if tokens >= 100 && !strings.Contains(content, item(r.Requirements[0].Text)) {
			t.Errorf("%d tokens: the first requirement was not kept first", tokens)
		}
		if len(full) <= tokens*4 && !bytes.Equal(msg, full) {
			t.Errorf("%d tokens: a message that fits was cut", tokens)
		}
	}
}

func TestFrozen(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		fpA := transcript.Fingerprint{1}
		if _, ok, err := s.frozen("s1", "t1", fpA); ok || err != nil {
			t.Fatalf("empty store: %v %v", ok, err)
		}
		if err := s.putFrozen("s1", "t1", fpA, []byte("first")); err != nil {
			t.Fatal(err)
		}
		// A racing call of the same turn does not replace what was frozen.
		if err := s.putFrozen("s1", "t1", fpA, []byte("second")); err != nil {
			t.Fatal(err)
		}
		if msg, ok, err := s.frozen("s1", "t1", fpA); !ok || err != nil || string(msg) != "first" {
			t.Errorf("Frozen = %q %v %v, want first", msg, ok, err)
		}
		// FrozenAt reads several turns at once; an empty message (a place left
		// empty on purpose) is found.
		if err := s.putFrozen("s1", "t1", transcript.Fingerprint{0xee}, []byte{}); err != nil {
			t.Fatal(err)
		}
		msgs, found, err := s.FrozenAt("s1", "t1", []transcript.Fingerprint{fpA, {0xee}, {0xef}})
		if err != nil || !found[0] || !found[1] || found[2] || string(msgs[0]) != "first" || len(msgs[1]) != 0 || msgs[2] != nil {
			t.Errorf("FrozenAt = %q %v %v", msgs, found, err)
		}
		// Other sessions and tasks (also one whose id extends this one's) are apart.
		for _, k := range [][2]string{{"s2", "t1"}, {"s1", "t"}, {"s1", "t1\x00"}} {
			if _, ok, _ := s.frozen(k[0], k[1], fpA); ok {
				t.Errorf("%q sees s1/t1's message", k)
			}
		}
		// Each task keeps the latest maxFrozen turns.
		last := maxFrozen + 6
		for i := 2; i <= last; i++ {
			if err := s.putFrozen("s1", "t1", transcript.Fingerprint{byte(i)}, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
			if err := s.putFrozen("s1", "t", transcript.Fingerprint{byte(i)}, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i <= last; i++ {
			msg, ok, err := s.frozen("s1", "t1", transcript.Fingerprint{byte(i)})
			if err != nil {
				t.Fatal(err)
			}
			if want := i > last-maxFrozen; ok != want || ok && msg[0] != byte(i) {
				t.Errorf("turn %d: kept %v (%q), want %v", i, ok, msg, want)
			}
		}
		if _, ok, _ := s.frozen("s1", "t", transcript.Fingerprint{byte(last)}); !ok {
			t.Error("task t lost its latest frozen message to t1's pruning")
		}
		if err := s.putFrozen("", "t1", fpA, nil); err == nil {
			t.Error("empty session accepted")
		}
		if err := s.putFrozen("s1", "", fpA, nil); err == nil {
			t.Error("empty task accepted")
		}
	})
}

func TestFrozenConcurrent(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range maxFrozen + 4 {
					fp := transcript.Fingerprint{byte(j)}
					if err := s.putFrozen("s", "t", fp, []byte{byte(i)}); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		n := 0
		for j := range maxFrozen + 4 {
			if _, ok, _ := s.frozen("s", "t", transcript.Fingerprint{byte(j)}); ok {
				n++
			}
		}
		if n != maxFrozen {
			t.Errorf("%d frozen messages kept, want %d", n, maxFrozen)
		}
	})
}

// TestMessageOthers: the brief of the other tasks follows the task's own
// state, holds their requests verbatim, leaves out what only their own
// context needs (commands, files read, the last test), within a bound
// takes at most half of it, the task's own requirements kept first, and
// never more than the bytes of the turns it stands for.
func TestMessageOthers(t *testing.T) {
	own := renderRecord()
	other := renderRecord()
	other.Task = "t2"
	other.Requirements = []Requirement{{Text: "Add a CSV export to report.go.", Turn: "cc"}}
	other.FilesChanged = []string{"report.go"}
	third := Record{Task: "t3", Requirements: []Requirement{{Text: "Rename the CLI flag --out to --output.", Turn: "dd"}}}
	_, content := decodeMessage(t, Message(own, Others{[]Record{other, third}, 1 << 20}, 0))
	mine, brief, ok := strings.Cut(content, othersTitle)
	if !ok || !strings.Contains(mine, Render(own, 0)) {
		t.Fatalf("own state, then the brief:\n%s", content)
	}
	want := "\nTask t2:\nRequirements (verbatim, oldest first):\n- Add a CSV export to report.go.\n" +
		"Unfinished:\n- empty input still panics\nFiles changed:\n- report.go\nProgress:\n- found the bug\n- fixed parse\n" +
		"Summary:\n- Parser fixed; empty input pending.\n" +
		"Task t3:\nRequirements (verbatim, oldest first):\n- Rename the CLI flag --out to --output.\n</rcm-task-state>"
	if brief != want {
		t.Errorf("brief:\n%q\nwant\n%q", brief, want)
	}
	if !bytes.Equal(Message(own, Others{[]Record{other, third}, 1 << 20}, 0), Message(own, Others{[]Record{other, third}, 1 << 20}, 0)) {
		t.Error("the same records gave different bytes")
	}
	// Bounded: the brief never takes more than half, and never pushes out
	// the task's own first requirement.
	long := other
	long.Requirements = []Requirement{{Text: strings.Repeat("export every column; ", 400), Turn: "cc"}}
	for _, tokens := range []int{100, 300, 1000, 4000} {
		msg := Message(own, Others{[]Record{long, third}, 1 << 20}, tokens)
		_, content := decodeMessage(t, msg)
		if len(msg) > tokens*4 {
			t.Errorf("%d tokens: %d bytes", tokens, len(msg))
		}
		if !strings.Contains(content, item(own.Requirements[0].Text)) {
			t.Errorf("%d tokens: the task's own first requirement was cut", tokens)
		}
		if _, brief, _ := strings.Cut(content, othersTitle); len(brief) > tokens*4/2 {
			t.Errorf("%d tokens: the brief took %d bytes", tokens, len(brief))
		}
	}
	if _, content := decodeMessage(t, Message(own, Others{}, 0)); strings.Contains(content, othersTitle) {
		t.Error("a brief without other tasks")
	}
	// A new task (no requirements yet) gets a message for the brief alone,
	// and none when there is nothing to say.
	fresh := Record{Task: "t4"}
	if Message(fresh, Others{}, 0) != nil || Message(fresh, Others{[]Record{third}, 10}, 0) != nil {
		t.Error("a message with nothing to say")
	}
	if _, content := decodeMessage(t, Message(fresh, Others{[]Record{third}, 1 << 20}, 0)); !strings.Contains(content, third.Requirements[0].Text) {
		t.Errorf("a new task's brief: %q", content)
	}
	// Never more than the turns it stands for.
	for _, n := range []int{0, 40, 200} {
		_, content := decodeMessage(t, Message(own, Others{[]Record{long, third}, n}, 0))
		if _, brief, ok := strings.Cut(content, othersTitle); ok && len(othersTitle)+len(brief)-len("</rcm-task-state>") > n {
			t.Errorf("a brief of at most %d bytes took %d", n, len(othersTitle)+len(brief))
		}
	}
}
