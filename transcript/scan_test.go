package transcript

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzMembers: on any valid JSON object, members sees the same keys and raw
// values as gjson does.
func FuzzMembers(f *testing.F) {
	f.Add(`{"role":"tool","content":"a\"b\\\\","tool_call_id":"x"}`)
	f.Add(`{ "a" : [1, {"b": "}"}, "]"] , "c":null,"d":-1.5e3,"e":{"f":"\\"}}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, obj string) {
		if !gjson.Valid(obj) || !gjson.Parse(obj).IsObject() {
			return
		}
		type kv struct{ k, v string }
		var want, got []kv
		gjson.Parse(obj).ForEach(func(k, v gjson.Result) bool {
			want = append(want, kv{k.Raw, v.Raw})
			return true
		})
		end := members(obj+`,{"next":1}]`, func(k, v string, off int) bool {
			if obj[off:off+len(v)] != v {
				t.Fatalf("offset %d does not hold %q", off, v)
			}
			got = append(got, kv{k, v})
			return true
		})
		if want := len(strings.TrimRight(obj, " \t\r\n")); end != want {
			t.Fatalf("members ends at %d, want %d", end, want)
		}
		// Stopped at a member, it reads no further.
		if len(want) > 0 {
			stop, seen, past := len(want)/2, 0, 0
			end := members(obj, func(k, v string, off int) bool {
				seen, past = seen+1, off+len(v)
				return seen <= stop
			})
			if seen != stop+1 || end != past {
				t.Fatalf("stopped at member %d: saw %d, ended at %d, want %d", stop, seen, end, past)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("members %q, gjson %q", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("member %d: %q, gjson %q", i, got[i], want[i])
			}
		}
	})
}

// FuzzSpan: on a valid JSON object Span finds the member gjson finds (its
// first, where gjson's path finds the last of duplicates: none here); on
// any input it returns a span inside the body, or none.
func FuzzSpan(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"a\"messages\""}],"tools":[]}`), "messages")
	f.Add([]byte(`{"a":{"messages":1},"messages" : [ ] }`), "messages")
	f.Add([]byte(`{"messages`), "messages")
	f.Add([]byte(`not json "messages":[1]`), "messages")
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		start, end, ok := Span(body, key)
		if !ok {
			start, end = 0, 0
		}
		if start < 0 || start > end || end > len(body) {
			t.Fatalf("span [%d:%d] of %d bytes", start, end, len(body))
		}
		if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() || !plainKey(key) {
			return
		}
		n := 0
		gjson.ParseBytes(body).ForEach(func(k, _ gjson.Result) bool {
			if k.Raw == `"`+key+`"` {
				n++
			}
			return true
		})
		if n > 1 {
			return
		}
		want := gjson.GetBytes(body, key)
		if ok != want.Exists() || ok && string(body[start:end]) != want.Raw {
			t.Fatalf("Span %v %q, gjson %v %q", ok, body[start:end], want.Exists(), want.Raw)
		}
	})
}

// FuzzArrayEnd: a body whose start repeats, up to its closing bracket,
// the messages array of an earlier one has its array end where Span finds
// it; on any input ArrayEnd stays inside the body.
func FuzzArrayEnd(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"a]"}],"tools":[]}`), []byte(`,{"role":"assistant","content":"b\\"}`))
	f.Add([]byte(`{"messages":[1,[2]]}`), []byte(``))
	f.Add([]byte(`{"messages":[]}`), []byte(`"x"`))
	f.Fuzz(func(t *testing.T, prev, added []byte) {
		start, end, ok := Span(prev, "messages")
		if !ok || end-start < 2 || prev[start] != '[' || prev[end-1] != ']' {
			return
		}
		next := append(append(bytes.Clone(prev[:end-1]), added...), prev[end-1:]...)
		got, ok := ArrayEnd(next, start, end-1)
		if ok && (got <= start || got > len(next)) {
			t.Fatalf("end %d outside (%d, %d]", got, start, len(next))
		}
		if !gjson.ValidBytes(prev) || !gjson.ValidBytes(next) || !gjson.GetBytes(next, "messages").IsArray() {
			return
		}
		_, want, _ := Span(next, "messages")
		if !ok || got != want {
			t.Fatalf("ArrayEnd %d %v, Span %d, in %s", got, ok, want, next)
		}
	})
}

// plainKey reports whether key is a name gjson's path syntax reads as
// itself.
func plainKey(key string) bool {
	for i, c := range key {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return key != ""
}

// FuzzElements: on any valid JSON array, elements sees the same raw values
// at the right offsets as gjson does.
func FuzzElements(f *testing.F) {
	f.Add(`[1, "a,]", {"b": [2, "]"]}, null , -3e2,[]]`)
	f.Add(`[]`)
	f.Add(` [ {} ] `)
	f.Fuzz(func(t *testing.T, arr string) {
		if !gjson.Valid(arr) || !gjson.Parse(arr).IsArray() {
			return
		}
		var want, got []string
		gjson.Parse(arr).ForEach(func(_, v gjson.Result) bool {
			want = append(want, v.Raw)
			return true
		})
		elements(arr, 0, func(rest string, off int) int {
			v := rest[:skipValue(rest, 0)]
			if arr[off:off+len(v)] != v {
				t.Fatalf("offset %d does not hold %q", off, v)
			}
			got = append(got, v)
			return len(v)
		})
		if len(got) != len(want) {
			t.Fatalf("elements %q, gjson %q", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("element %d: %q, gjson %q", i, got[i], want[i])
			}
		}
	})
}

// FuzzValid: valid accepts exactly what gjson.Valid accepts.
func FuzzValid(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,-0.5e+3,true,false,null,"x\u00e9\n\"\\"],"b":{}}`, ` [ ] `, `""`, `-`, `01`, `1.`, `1e`, `[1,]`, `{"a":1,}`,
		`"tab	in string"`, `"abcdefgh\"ijklmnop"`, `"abcdefghijklmnopqrstuvwxyz0123456789\\"`, `{"a" 1}`, `nul`, `"\x"`, `"\u12G4"`,
		"\"\xff\xfe bytes\"", `{"k":"v"} x`, ``, ` `,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := valid(s), gjson.Valid(s); got != want {
			t.Fatalf("valid(%q) = %v, gjson.Valid %v", s, got, want)
		}
	})
}
