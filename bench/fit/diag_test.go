package fit

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/bench/chatlog"
	"github.com/rcm-dev/rcm/router"
)

func TestDiag(t *testing.T) {
	if os.Getenv("SCRATCH") == "" {
		t.Skip()
	}
	var all []*Session
	for _, dir := range strings.Fields(os.Getenv("SCRATCH_REAL")) {
		logs, err := chatlog.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := Real(logs)
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv("SCRATCH_LOAD") != "" {
			continue
		}
		all = append(all, rs...)
	}
	for _, head := range []string{router.HeadNew, router.HeadContinue, router.HeadReturn} {
		var sum [2][router.Features]float64
		var n [2]float64
		for _, s := range all {
			rows, _, err := Simulate(context.Background(), s, &start, 0.8, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if r.Head != head {
					continue
				}
				k := 0
				if r.Y {
					k = 1
				}
				n[k]++
				for f := range r.X {
					sum[k][f] += r.X[f]
				}
			}
		}
		t.Logf("head %s: %v negatives, %v positives", head, n[0], n[1])
		for f := range router.FeatureNames {
			t.Logf("  %-12s %.3f %.3f", router.FeatureNames[f], sum[0][f]/n[0], sum[1][f]/n[1])
		}
	}
}
