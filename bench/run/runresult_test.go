package run

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/bench/spec"
)

// TestRunsFile: a last line cut short by a crash is ignored on read and
// cut before the next append; a bad line elsewhere is an error.
func TestRunsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), RunsFile)
	good := `{"key":"s|base|native|-|0","resolved":true,"threshold":null}` + "\n"
	os.WriteFile(path, []byte(good+`{"key":"s|switch`), 0o644)
	runs, err := ReadRuns(path)
	if err != nil || len(runs) != 1 || !math.IsNaN(float64(runs[0].Threshold)) {
		t.Fatalf("%+v, %v", runs, err)
	}
	l, err := openRunLog(path)
	if err != nil {
		t.Fatal(err)
	}
	r := Result{Key: Key("s", ConditionSwitch, spec.ModeRCM, 0.5, 0), Session: "s", Condition: ConditionSwitch, Mode: spec.ModeRCM, Threshold: 0.5}
	if err := l.append(&r); err != nil {
		t.Fatal(err)
	}
	l.close()
	runs, err = ReadRuns(path)
	if err != nil || len(runs) != 2 || runs[1].Key != "s|switch|rcm|0.5|0" {
		t.Fatalf("%+v, %v", runs, err)
	}
	os.WriteFile(path, []byte("not json\n"+good), 0o644)
	if _, err := ReadRuns(path); err == nil || !strings.Contains(err.Error(), ":1:") {
		t.Errorf("bad first line: %v", err)
	}
}
