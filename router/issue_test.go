package router

import (
	"math"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
)

// env is an OpenCode system prompt's environment block.
func env(dir string, repo bool) chat.Message {
	git := "no"
	if repo {
		git = "yes"
	}
	return chattest.System("You are opencode.\n<env>\n  Working directory: " + dir + "\n  Is directory a git repo: " + git + "\n</env>")
}

// work is a request answered by tool calls (name, JSON arguments as a map)
// and a closing answer.
func work(req string, calls ...map[string]string) []chat.Message {
	ms := []chat.Message{chattest.User(req)}
	for k, args := range calls {
		id := "call_" + string(rune('a'+k))
		name := args["tool"]
		delete(args, "tool")
		ms = append(ms, chattest.ToolCall(id, name, args), chattest.ToolResult(id, "ok"))
	}
	return append(ms, chattest.Assistant("Done."))
}

func edit(path string) map[string]string { return map[string]string{"tool": "edit", "filePath": path} }
func bash(cmd, dir string) map[string]string {
	return map[string]string{"tool": "bash", "command": cmd, "workdir": dir}
}

// TestIssueCases are the cases of issue 9: sessions as people have them, in
// one checkout, without tags, in any script. A case that is not sure may
// fall back (forwarding what native would), but never route elsewhere.
func TestIssueCases(t *testing.T) {
	const proj = "/home/dev/proj"
	dates := work("Add a date parser in dateparse.py: parse ISO 8601 dates with optional time zones into datetime objects.", edit(proj+"/dateparse.py"))
	lru := work("Implement an LRU cache class in lru.py with get, put and a fixed capacity that evicts the least recently used entry.", edit(proj+"/lru.py"))
	for _, c := range []struct {
		name  string
		msgs  [][]chat.Message
		sys   chat.Message
		want  string // the task of the last turn's decision ("" any)
		never string // a task the last turn must not be routed to
		sure  bool   // want must be routed, not a fallback's guess
	}{
		{"date parser timezone bug", [][]chat.Message{dates, lru, work("Now fix the date parser timezone bug", edit(proj+"/dateparse.py"))}, env(proj, true), "t1", "t2", false},
		{"tests for the date parser", [][]chat.Message{dates, lru, work("Also add tests for the date parser", map[string]string{"tool": "read", "filePath": proj + "/dateparse.py"}, edit(proj+"/test_dateparse.py"))}, env(proj, true), "t1", "t2", false},
		{"back to the cache by file", [][]chat.Message{dates, lru, work("In lru.py make put refresh an existing key instead of adding it twice.")}, env(proj, true), "", "", false},
		{"new unrelated work in one repository", [][]chat.Message{dates, lru, work("Write a command line tool that reads a CSV file of expenses, groups them by month and category, and prints a summary table with totals and averages for each group.")}, env(proj, true), "", "t2", false},
		{"CJK", [][]chat.Message{
			work("实现一个日期解析器，支持带时区的ISO格式日期", edit(proj+"/dateparse.py")),
			work("实现一个LRU缓存，支持固定容量和淘汰最久未使用的条目", edit(proj+"/lru.py")),
			work("修复日期解析器的时区错误"),
		}, env(proj, true), "", "t2", false},
		{"Cyrillic", [][]chat.Message{
			work("Напиши парсер дат с поддержкой часовых поясов", edit(proj+"/dateparse.py")),
			work("Реализуй LRU кэш с ограничением ёмкости", edit(proj+"/lru.py")),
			work("Исправь ошибку часового пояса в парсере дат"),
		}, env(proj, true), "", "t2", false},
		{"no ASCII words", [][]chat.Message{dates, lru, work("？！……")}, env(proj, true), "", "", false},
		{"sibling folders under home", [][]chat.Message{
			work("Fix the flaky login test.", bash("go test ./auth", "/home/dev/code/a")),
			work("Update the changelog for the release.", bash("git log --oneline", "/home/dev/code/b")),
			work("Run it again please and show me the failures.", bash("go test ./auth", "/home/dev/code/a")),
		}, env("/home/dev/code", false), "t1", "t2", true},
		{"sibling folders under /srv", [][]chat.Message{
			work("Fix the flaky login test.", bash("go test ./auth", "/srv/app/x")),
			work("Update the changelog for the release.", bash("git log --oneline", "/srv/app/y")),
			work("Now bump the version in there too.", bash("cat VERSION", "/srv/app/y")),
		}, env("/srv/app", false), "t2", "t1", true},
		{"folders under /tmp", [][]chat.Message{
			work("Fix the flaky login test.", bash("go test ./auth", "/tmp/x")),
			work("Update the changelog for the release.", bash("git log --oneline", "/tmp/y")),
			work("Run it again please and show me the failures.", bash("go test ./auth", "/tmp/x")),
		}, env("/tmp", false), "t1", "t2", true},
		{"folders under /opt", [][]chat.Message{
			work("Fix the flaky login test.", bash("go test ./auth", "/opt/svc/x")),
			work("Update the changelog for the release.", bash("git log --oneline", "/opt/svc/y")),
			work("Run it again please and show me the failures.", bash("go test ./auth", "/opt/svc/x")),
		}, env("/opt/svc", false), "t1", "t2", true},
		{"one repository opened directly: subfolders are one checkout", [][]chat.Message{
			work("Fix the flaky login test in auth.", bash("go test ./auth", proj+"/auth")),
			work("Now run the storage tests as well.", bash("go test ./storage", proj+"/storage")),
		}, env(proj, true), "t1", "t2", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms := []chat.Message{c.sys}
			r := mustNew(t, Config{})
			st := store{}
			var p Plan
			for _, turn := range c.msgs {
				ms = append(ms, turn...)
				// One call per turn: the request and its answer so far.
				_, p = st.route(t, r, chattest.Body(ms...), Options{})
			}
			d := p.Current
			if math.IsNaN(d.Confidence) || math.IsInf(d.Confidence, 0) || p.Fallback != (d.Confidence < DefaultThreshold) {
				t.Fatalf("decision %+v fallback %v: confidence not finite or fallback inconsistent", d, p.Fallback)
			}
			if !p.Fallback && d.Task == c.never {
				t.Fatalf("confidently misrouted to %s: %+v", c.never, d)
			}
			if c.want != "" && (d.Task != c.want || c.sure && p.Fallback) {
				t.Fatalf("decision %+v fallback %v, want %s (routed: %v)", d, p.Fallback, c.want, c.sure)
			}
			t.Logf("%s %.3f %s fallback=%v", d.Task, d.Confidence, d.Method, p.Fallback)
		})
	}
}
