package transcript

import (
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
		members(obj, func(k, v string, off int) {
			if obj[off:off+len(v)] != v {
				t.Fatalf("offset %d does not hold %q", off, v)
			}
			got = append(got, kv{k, v})
		})
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
		elements(arr, func(v string, off int) {
			if arr[off:off+len(v)] != v {
				t.Fatalf("offset %d does not hold %q", off, v)
			}
			got = append(got, v)
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
