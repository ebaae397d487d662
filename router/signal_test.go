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
		if got := Tag(in); got != want {
			t.Errorf("Tag(%q) = %q, want %q", in, got, want)
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
	} {
		if got := FollowUp(in); got != want {
			t.Errorf("FollowUp(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestSplitRoot(t *testing.T) {
	for _, c := range []struct{ in, root, rel string }{
		{"/work/ws1/django/utils/http.py", "/work/ws1", "django/utils/http.py"},
		{"/work/ws1", "/work/ws1", ""},
		{"/home/dev/project/src/a.go", "/home/dev/project", "src/a.go"},
		{"/Users/alex/cli/cmd/entire", "/Users/alex/cli", "cmd/entire"},
		{"/dev/null", "", "null"},
		{"/tmp/x/y", "", "x/y"},
		{"/work", "", ""},
		{"/work/notes.txt", "", ""},
		{"/home/user/.linuxbrew/bin", "", ""},
		{"/work//x", "", ""},
	} {
		if root, rel := splitRoot(c.in); root != c.root || rel != c.rel {
			t.Errorf("splitRoot(%q) = %q %q, want %q %q", c.in, root, rel, c.root, c.rel)
		}
	}
}

type roots struct{ all, workdirs []string }

func (r *roots) term(term, bool) {}
func (r *roots) path(p string, wd bool) {
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
		scan(c.in, &r)
		if !slices.Equal(r.all, c.all) || !slices.Equal(r.workdirs, c.workdirs) {
			t.Errorf("scan(%q) = %v %v, want %v %v", c.in, r.all, r.workdirs, c.all, c.workdirs)
		}
	}
}
