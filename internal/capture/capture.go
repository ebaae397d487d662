package capture

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Dir is the folder of the OpenCode captures.
func Dir() string { return testdata("opencode") }

// ClaudeCodeDir is the folder of the Claude Code captures.
func ClaudeCodeDir() string { return testdata("claude-code") }

func testdata(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", name)
}

// Request is one captured request.
type Request struct {
	Name   string
	Method string
	Path   string
	Header http.Header // as OpenCode sent them, less the transport's own
	Body   []byte      // exact bytes
}

// Load reads the OpenCode capture called name (e.g. "continue_request").
func Load(tb testing.TB, name string) Request {
	tb.Helper()
	return LoadIn(tb, Dir(), name)
}

// LoadIn reads the capture called name in the folder dir; a capture
// without a body file (a WebSocket handshake) has a nil Body.
func LoadIn(tb testing.TB, dir, name string) Request {
	tb.Helper()
	body, err := os.ReadFile(filepath.Join(dir, name+".body.json"))
	if err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	meta, err := os.ReadFile(filepath.Join(dir, name+".req.json"))
	if err != nil {
		tb.Fatal(err)
	}
	r := Request{Name: name, Header: http.Header{}, Body: body,
		Method: gjson.GetBytes(meta, "method").String(), Path: gjson.GetBytes(meta, "path").String()}
	gjson.GetBytes(meta, "headers").ForEach(func(_, kv gjson.Result) bool {
		switch k := http.CanonicalHeaderKey(kv.Get("0").String()); k {
		case "Host", "Content-Length", "Connection", "Accept-Encoding":
		default:
			r.Header.Add(k, kv.Get("1").String())
		}
		return true
	})
	return r
}

// Body reads the body of the capture called name.
func Body(tb testing.TB, name string) []byte {
	tb.Helper()
	return Load(tb, name).Body
}

// Grow repeats the turns of the continue_request capture until the body is
// about size bytes, each tool output padded to 4 KB, as in a long session:
// the body of the 1 MB benchmarks.
func Grow(tb testing.TB, size int) []byte {
	tb.Helper()
	body := Body(tb, "continue_request")
	msgs := gjson.GetBytes(body, "messages")
	var turns [][]byte
	msgs.ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").String() != "system" {
			turns = append(turns, []byte(m.Raw))
		}
		return true
	})
	var arr bytes.Buffer
	arr.WriteByte('[')
	arr.WriteString(msgs.Get("0").Raw)
	for i := 0; arr.Len() < size; i++ {
		for _, m := range turns {
			arr.WriteByte(',')
			arr.Write(bytes.Replace(m, []byte(`hello-from-tool\n`), []byte(fmt.Sprintf(`tool output %d %s\n`, i, bytes.Repeat([]byte("x"), 4000))), 1))
		}
	}
	arr.WriteByte(']')
	out := append([]byte{}, body[:msgs.Index]...)
	out = append(out, arr.Bytes()...)
	return append(out, body[msgs.Index+len(msgs.Raw):]...)
}

// Names lists every OpenCode capture.
func Names(tb testing.TB) []string {
	tb.Helper()
	return NamesIn(tb, Dir())
}

// NamesIn lists every capture in the folder dir.
func NamesIn(tb testing.TB, dir string) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.req.json"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no captures in %s: %v", dir, err)
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(filepath.Base(f), ".req.json")
	}
	sort.Strings(names)
	return names
}
