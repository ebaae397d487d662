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
		members(obj, func(k, v string) { got = append(got, kv{k, v}) })
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
