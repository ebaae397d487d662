package chatlog

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestSpecStoryReplyShapes: replies as real early-2025 and v2 exports write
// them, in my own wording: reasoning that closes in mid-line with the reply
// running on after it, a diff whose context holds a fence of the file
// diffed, and the step separator escaped.
func TestSpecStoryReplyShapes(t *testing.T) {
	for _, c := range []struct {
		name, reply, want, text string
	}{
		{"reasoning closed in mid-line",
			"<think>The user wants two providers.\nLet me look at the folder first:</think>I'll add both providers.\n\n---\n\nRead file: src/search.py\n\n---\n\nDone.",
			"assistant read:/w/src/search.py | tool | assistant", "I'll add both providers."},
		{"reasoning on one line",
			"<think>short</think>\n\nRead file: src/a.py",
			"assistant read:/w/src/a.py | tool", ""},
		{"a diff holding a fence",
			"Tool use: **edit_file**\n\n<details><summary>Edit file: docs/USAGE.md</summary>\n\n```diff\n  intro\n+ new line\n  ```kotlin\n  code()\n  ```\n```\n\n</details>\n\n---\n\nTool use: **read_file**\n\nRead file: src/A.kt\n\n---\n\nThe docs are updated.",
			"assistant edit:/w/docs/USAGE.md read:/w/src/A.kt | tool | tool | assistant", ""},
		{"an escaped separator",
			"Looking first.\n\n_\\*\\*\\*\\*_\n\nRead file: src/b.py\n\n_\\*\\*\\*\\*_\n\nFixed.",
			"assistant read:/w/src/b.py | tool | assistant", "Looking first."},
		// The old format names no tool: a search, a listing and a terminal
		// run are known by their shape, and a shell fence among words, a
		// C# doc comment's <summary> and a listing of "undefined" are not.
		{"old-format steps",
			"Let me search first.\n\n---\n\n<details>\n            <summary>Grep search for \"new Parser\\(\" • **2** files</summary>\n\n| File | Line |\n|---|---|\n| `file:///c%3A/src/a.cs` | L3 |\n\n</details>\n\n---\n\n<details>\n            <summary>Searched codebase \"where are dates parsed\" • **25** results</summary>\n\n| File | Lines |\n\n</details>\n\n---\n\n<details>\n            <summary>Listed directory src/parse • **4** results</summary>\n\n| 📄 `a.cs` |\n\n</details>\n\n---\n\n```bash\ndotnet test --logger console\n```\n\n```\nTests failed: 1\n```\n\n---\n\n```powershell\nnpm run dev\n```\n\n---\n\nRun it yourself:\n\n```bash\nnpm test\n```\n\n---\n\n```csharp\n/// <summary>Parses.</summary>\n```\n\n---\n\n<details>\n            <summary>Listed directory undefined • **0** results</summary>\n\nNo results found\n</details>",
			"assistant grep: codebasesearch: list: bash:dotnet test --logger console bash:npm run dev | tool | tool | tool | tool | tool | assistant listdir: | tool", "Let me search first."},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids := 0
			ms := specReply(strings.Split(c.reply, "\n"), newWork("/w", &ids))
			if got := summary(ms); got != c.want {
				t.Errorf("%s\nwant %s", got, c.want)
			}
			if c.text != "" && (len(ms) == 0 || strings.TrimSpace(ms[0].Content) != c.text) {
				t.Errorf("first text %q, want %q", ms[0].Content, c.text)
			}
			if c.name == "old-format steps" {
				args := ms[0].ToolCalls
				if p := gjson.Get(args[0].Function.Arguments, "pattern").String(); p != `new Parser\(` {
					t.Errorf("grep pattern %q", p)
				}
				if p := gjson.Get(args[2].Function.Arguments, "path").String(); p != "/w/src/parse" {
					t.Errorf("listed %q", p)
				}
				if r := ms[4].Content; r != "Tests failed: 1" {
					t.Errorf("terminal output %q", r)
				}
				if txt := ms[len(ms)-2].Content; !strings.Contains(txt, "Run it yourself:") || !strings.Contains(txt, "<summary>Parses.") {
					t.Errorf("text %q", txt)
				}
			}
			if c.name == "a diff holding a fence" {
				if n := gjson.Get(ms[0].ToolCalls[0].Function.Arguments, "newString").String(); n != "intro\nnew line\n```kotlin\ncode()\n```\n" {
					t.Errorf("newString %q", n)
				}
			}
		})
	}
}
