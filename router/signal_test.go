package router

import (
	"slices"
	"testing"
)

func TestTag(t *testing.T) {
	for in, want := range map[string]string{
		"[task: auth-fix] add a test":        "auth-fix",
		"please [Task:Parser] look again":    "parser",
		"[task : a/b.c_d]":                   "a/b.c_d",
		"[task: two words]":                  "",
		"[task:]":                            "",
		"[tasks: x]":                         "",
		"[x] then [task: ok]":                "ok",
		"[task: unterminated":                "",
		"no tag here":                        "",
		"[task: " + string(make([]byte, 65)): "",
	} {
		if got := writtenTag(in); got != want {
			t.Errorf("writtenTag(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFollowUp(t *testing.T) {
	for in, want := range map[string]bool{
		"yes please":                   true,
		"go ahead":                     true,
		"commit, push":                 true,
		"/review":                      true,
		"/pr-review-toolkit:review-pr": true,
		"<command-message>reviewer</command-message>\n<command-name>/reviewer</command-name>": true,
		"yeah let's do 1 for both mise homebrew":                                              true,
		"let's do the hint if it's small":                                                     true,
		"what do io.Discard does ?":                                                           false,
		"/work/ws1 has a failing test in the parser module now":                               false,
		"Fix the date parsing bug: parse_http_date treats two-digit years wrong":              false,
		"yes, and then rewrite the whole parser module to use the new tokenizer with tests":   false,
		"": false,
		// Scripts without spaces: a sentence is one field, not one word.
		"好的": true,
		"修复日期解析器的时区错误并添加测试用例":                         false,
		"タイムゾーンのバグを直してテストを追加して":                       false,
		"Исправь ошибку часового пояса в парсере дат": false,
	} {
		if got := isFollowUp(in); got != want {
			t.Errorf("isFollowUp(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestPlace(t *testing.T) {
	folder := frame{cwd: "/work"}
	repo := frame{cwd: "/home/dev/code/app", repo: true}
	code := frame{cwd: "/home/dev/code"}
	tmp := frame{cwd: "/tmp"}
	for _, c := range []struct {
		f           frame
		in, ws, rel string
	}{
		{folder, "/work/ws1/django/utils/http.py", "ws1", "ws1/django/utils/http.py"},
		{folder, "/work/ws1", "ws1", "ws1"},
		{folder, "/work/notes.txt", ".", "notes.txt"},
		{folder, "/work", ".", ""},
		{repo, "/home/dev/code/app/src/a.go", ".", "src/a.go"},
		{repo, "/home/dev/code/app/.worktrees/feat/src/a.go", ".worktrees/feat", "src/a.go"},
		{repo, "/home/dev/code/lib/x.go", "/home/dev/code/lib", "x.go"},
		{repo, "/dev/null", "", "null"},
		{repo, "/tmp/x/y", "", "x/y"},
		{code, "/home/dev/code/a/main.py", "a", "a/main.py"},
		{code, "/home/dev/code/b/main.py", "b", "b/main.py"},
		{tmp, "/tmp/x/y.c", "x", "x/y.c"},
		{frame{cwd: "/opt/svc"}, "/opt/other/z.go", "/opt/other", "z.go"},
		{frame{cwd: "/srv/app"}, "/srv/app/x/m.rb", "x", "x/m.rb"},
		{frame{cwd: "/srv/app"}, "/srv/app/y/m.rb", "y", "y/m.rb"},
		{frame{}, "/work/ws1/a.py", "", "work/ws1/a.py"},
		{repo, "/work/ws1/django/a.py", "/work/ws1", "django/a.py"},
		{repo, "/repr", "", ""},
	} {
		if ws, rel := c.f.place(c.in); ws != c.ws || rel != c.rel {
			t.Errorf("%+v.place(%q) = %q %q, want %q %q", c.f, c.in, ws, rel, c.ws, c.rel)
		}
	}
}

type roots struct{ all, workdirs []string }

func (r *roots) term(term, int) {}
func (r *roots) path(p, _ string, wd bool) {
	r.all = append(r.all, p)
	if wd {
		r.workdirs = append(r.workdirs, p)
	}
}

func TestScanPaths(t *testing.T) {
	for _, c := range []struct {
		in            string
		all, workdirs []string
	}{
		{`{"command":"cd /work/ws3 && ls","workdir":"/work/ws3"}`, []string{"/work/ws3", "/work/ws3"}, []string{"/work/ws3", "/work/ws3"}},
		{`{"filePath":"/work/ws2/a.py"}`, []string{"/work/ws2/a.py"}, nil},
		{`see https://github.com/x/y and /work/ws1/b.go`, []string{"/work/ws1/b.go"}, nil},
		{`{"command":"cat x\n/work/ws4/c"}`, []string{"/work/ws4/c"}, nil},
	} {
		var r roots
		scan(c.in, &frame{cwd: "/work"}, &r)
		if !slices.Equal(r.all, c.all) || !slices.Equal(r.workdirs, c.workdirs) {
			t.Errorf("scan(%q) = %v %v, want %v %v", c.in, r.all, r.workdirs, c.all, c.workdirs)
		}
	}
}

func TestRefersBack(t *testing.T) {
	for in, want := range map[string]bool{
		"Back to that issue. Here is what the discussion said:\n\nlong text": true,
		"Some more on that issue from the thread:\n\n...":                    true,
		"Going back to the date parser: it still fails on 1970":              true,
		"Please fix this issue:\n\nBack to back tests fail":                  false, // only the opening line counts
		"Add an LRU cache to the fetcher":                                    false,
		"":                                                                   false,
	} {
		if got := refersBack(in); got != want {
			t.Errorf("refersBack(%.40q) = %v, want %v", in, got, want)
		}
	}
}
