package bench

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/bench/replay"
	"github.com/rcm-dev/rcm/bench/run"
)

// jsonKeys lists the JSON keys of a struct type, embedded structs'
// included, nested structs' and slices of structs' too.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || tag == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Slice || ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && tag == "" {
			keys = append(keys, jsonKeys(ft)...)
			continue
		}
		keys = append(keys, tag)
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[replay.Bin]() && ft.PkgPath() == t.PkgPath() {
			keys = append(keys, jsonKeys(ft)...)
		}
	}
	return keys
}

// TestSpecDocumentsResults: SPEC.md names every key of results.json's
// rows (of bench sessions and of real ones) and of a runs.jsonl line (the
// _ci intervals by their rule).
func TestSpecDocumentsResults(t *testing.T) {
	doc, err := os.ReadFile("SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[replay.Results](), reflect.TypeFor[replay.Summary](), reflect.TypeFor[replay.LogResults](), reflect.TypeFor[run.Result]()} {
		for _, k := range jsonKeys(typ) {
			if strings.HasSuffix(k, "_ci") {
				continue
			}
			if !strings.Contains(string(doc), "`"+k+"`") {
				t.Errorf("SPEC.md does not document %s's key %q", typ.Name(), k)
			}
		}
	}
}
