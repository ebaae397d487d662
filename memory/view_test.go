package memory

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/transcript"
)

// TestViewReadsAsStore: a View reads labels, tasks, records and frozen
// messages as the Store's own reads do, and its Frozen finds the messages
// of every task frozen for the turns asked, and of no other turn.
func TestViewReadsAsStore(t *testing.T) {
	eachStore(t, func(t *testing.T, openTest opener) {
		s := openTest(t, Options{})
		fps := []transcript.Fingerprint{{1}, {2}, {3}}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := s.putLabels("s1", fps[:2], []Label{{Task: "t1", Confidence: 0.9, Method: "signal", Routed: true, At: at}, {Task: "t2", At: at}}); err != nil {
			t.Fatal(err)
		}
		for i, id := range []string{"t2", "t1"} {
			if err := s.putTask("s1", Task{ID: id, Name: id, Created: at.Add(time.Duration(i) * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			if err := s.putRecord("s1", Record{Task: id, Workspace: "/w/" + id}); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range []struct {
			task string
			fp   transcript.Fingerprint
			msg  string
		}{{"t1", fps[0], "t1 at 1"}, {"t2", fps[0], "t2 at 1"}, {"t1", fps[2], ""}, {"t1", transcript.Fingerprint{9}, "not asked"}, {"t10", fps[1], "t10 at 2"}} {
			if err := s.putFrozen("s1", f.task, f.fp, []byte(f.msg)); err != nil {
				t.Fatal(err)
			}
		}
		labels, found, _ := s.Labels("s1", fps)
		tasks, _ := s.Tasks("s1")
		recs, _ := s.Records("s1")
		var vl []Label
		var vf []bool
		var vt []Task
		var vr []Record
		var frozen Frozen
		err := s.View(func(v *View) (err error) {
			if vl, vf, err = v.Labels("s1", fps); err != nil {
				return err
			}
			if vt, err = v.Tasks("s1"); err != nil {
				return err
			}
			if vr, err = v.Records("s1"); err != nil {
				return err
			}
			frozen, err = v.Frozen("s1", fps)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(vl, labels) || !reflect.DeepEqual(vf, found) || !reflect.DeepEqual(vt, tasks) || !reflect.DeepEqual(vr, recs) {
			t.Fatalf("view read %v %v %v %v, store %v %v %v %v", vl, vf, vt, vr, labels, found, tasks, recs)
		}
		for _, task := range []string{"t1", "t2", "t10", "t3"} {
			want, wantFound, _ := s.FrozenAt("s1", task, fps)
			got, gotFound := frozen.At(task, fps)
			if fmt.Sprintf("%q %v", got, gotFound) != fmt.Sprintf("%q %v", want, wantFound) {
				t.Errorf("%s: view %q %v, store %q %v", task, got, gotFound, want, wantFound)
			}
		}
		if len(frozen) != 3 || len(frozen["t1"]) != 2 {
			t.Fatalf("frozen %q", frozen)
		}
	})
}
