package memory

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func renderRecord() Record {
	exit0, exit1 := 0, 1
	return Record{
		Task: "t1",
		Requirements: []Requirement{
			{Text: "Fix the off-by-one in parse.go.\nKeep the public API.", Turn: "aa"},
			{Text: "Also handle empty input.", Turn: "bb", Amends: true},
		},
		Workspace:    "/work/ws1",
		FilesRead:    []string{"parse.go", "lex.go"},
		FilesChanged: []string{"parse.go"},
		Commands:     []Command{{Cmd: "go build ./...", Exit: &exit0}, {Cmd: "go test ./...", Exit: &exit1}},
		LastTest:     &TestRun{Command: Command{Cmd: "go test ./...", Exit: &exit1}, Outcome: "failed: TestEmpty"},
		Progress:     []string{"found the bug", "fixed parse"},
		Unfinished:   []string{"empty input still panics"},
		Summary:      "Parser fixed; empty input pending.",
	}
}

func TestRenderGolden(t *testing.T) {
	want := "Task t1 state (rcm memory)\n" +
		"Workspace: /work/ws1\n" +
		"Requirements (verbatim, oldest first):\n" +
		"- Fix the off-by-one in parse.go.\n  Keep the public API.\n" +
		"- (amends the above) Also handle empty input.\n" +
		"Unfinished:\n- empty input still panics\n" +
		"Last test:\n- `go test ./...` (exit 1) failed: TestEmpty\n" +
		"Files changed:\n- parse.go\n" +
		"Progress:\n- found the bug\n- fixed parse\n" +
		"Summary:\n- Parser fixed; empty input pending.\n" +
		"Commands run:\n- `go build ./...` (exit 0)\n- `go test ./...` (exit 1)\n" +
		"Files read:\n- parse.go\n- lex.go\n"
	if got := Render(renderRecord(), 0); got != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
	if got := Render(renderRecord(), 10000); got != want {
		t.Errorf("Render with a large budget differs:\n%s", got)
	}
	if got := Render(Record{Task: "t2"}, 0); got != "Task t2 state (rcm memory)\n" {
		t.Errorf("empty record: %q", got)
	}
}

func TestRenderBounded(t *testing.T) {
	r := renderRecord()
	for i := range 40 {
		r.Requirements = append(r.Requirements, Requirement{Text: fmt.Sprintf("requirement %d: %s", i, strings.Repeat("é", i*7))})
		r.Progress = append(r.Progress, fmt.Sprint("step ", i))
		r.Commands = append(r.Commands, Command{Cmd: fmt.Sprint("cmd ", i)})
	}
	full := Render(r, 0)
	for tokens := 1; tokens < len(full)/4+10; tokens += 7 {
		got := Render(r, tokens)
		checkRender(t, got, tokens)
		// Up to the first note of a cut, the output is the full render's.
		cut := len(got)
		if i := strings.Index(got, " not shown]"); i >= 0 {
			cut = strings.LastIndexByte(got[:i], '\n') + 1
		}
		if !strings.HasPrefix(full, got[:cut]) {
			t.Fatalf("maxTokens %d: output before any cut differs from the full render:\n%s", tokens, got)
		}
		// Requirements come before any other section.
		if i := strings.Index(got, "Unfinished:"); i >= 0 && i < strings.Index(got, r.Requirements[len(r.Requirements)-1].Text) {
			t.Fatalf("maxTokens %d: a later section precedes the last requirement", tokens)
		}
	}
	// A budget that holds only part of the requirements cuts them with a
	// note and adds nothing else.
	got := Render(r, 300)
	if !strings.Contains(got, "bytes cut;") || strings.Contains(got, "Unfinished:") {
		t.Errorf("Render(300 tokens) =\n%s", got)
	}
	if !strings.Contains(got, r.Requirements[0].Text[:20]) {
		t.Error("the first requirement was not kept")
	}
	// Progress keeps the newest items when cut.
	r.Requirements = r.Requirements[:1]
	got = Render(r, 100)
	if !strings.Contains(got, "earlier not shown") || !strings.Contains(got, "step 39") || strings.Contains(got, "step 0\n") {
		t.Errorf("Render(100 tokens) =\n%s", got)
	}
}

func checkRender(t *testing.T, got string, tokens int) {
	t.Helper()
	if len(got) > tokens*4 {
		t.Fatalf("maxTokens %d: %d bytes", tokens, len(got))
	}
	if !utf8.ValidString(got) {
		t.Fatalf("maxTokens %d: invalid UTF-8: %q", tokens, got)
	}
}

func FuzzRender(f *testing.F) {
	f.Add("fix the bug", "step", "go test", 10)
	f.Add(strings.Repeat("ü", 300), "", "x", 40)
	f.Fuzz(func(t *testing.T, req, progress, cmd string, tokens int) {
		if !utf8.ValidString(req) || !utf8.ValidString(progress) || !utf8.ValidString(cmd) {
			return
		}
		r := Record{Task: "t", Unfinished: []string{progress}}
		for i := range 5 {
			r.Requirements = append(r.Requirements, Requirement{Text: req, Amends: i > 0})
			r.Progress = append(r.Progress, progress)
			r.Commands = append(r.Commands, Command{Cmd: cmd})
		}
		got := Render(r, tokens)
		if tokens > 0 {
			checkRender(t, got, tokens)
		}
		if tokens > 0 && tokens < 1<<20 && len(got) == 0 && tokens*4 > len("Task t state (rcm memory)\n") {
			t.Fatal("nothing rendered although the header fits")
		}
	})
}
