package fit

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/bench/chatlog"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
)

func TestScratch(t *testing.T) {
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
		all = append(all, rs...)
	}
	if os.Getenv("SCRATCH_SYNTH") != "" {
		tasks, _, err := benchspec.ReadData("/work/shared/data", benchspec.FormatMiniSWE)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range [][2]string{{benchspec.LayoutShared, ""}, {benchspec.LayoutShared, benchspec.ReturnsUntitled}} {
			spec, _, err := benchspec.NewSpec("fit", tasks, 1)
			if err != nil {
				t.Fatal(err)
			}
			spec.Layout, spec.Returns = l[0], l[1]
			ss, err := Synthetic(spec)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, ss...)
		}
	}
	ctx := context.Background()
	var lambda float64
	fmt.Sscan(os.Getenv("SCRATCH_L"), &lambda)
	coef, err := Fit(ctx, all, Options{Lambda: lambda})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(coef, "x")
	os.WriteFile("/tmp/coef.go", b, 0o644)
	m, _ := Measure(ctx, all, coef, []float64{0.8})
	cv, err := CrossValidate(ctx, all, Options{Lambda: lambda}, []float64{0.8})
	if err != nil {
		t.Fatal(err)
	}
	Table(os.Stdout, []string{"real in-sample", "real held-out", "synthetic in-sample", "synthetic held-out"},
		[]Summary{Summarize(m[0.8], true), Summarize(cv[0.8], true), Summarize(m[0.8], false), Summarize(cv[0.8], false)})
	Reliability(os.Stdout, Summarize(cv[0.8], true))
	if os.Getenv("SCRATCH_V") != "" {
		for _, c := range cv[0.8] {
			if c.Real && (c.Lost || c.Split || c.Return == "wrong" || c.Kind == KindNew) {
				t.Logf("%s #%d %s -> %s %.2f %s routed=%v lost=%v split=%v ret=%s pnew=%.2f", c.Session, c.Turn, c.Kind, c.Task, c.Conf, c.Method, c.Routed, c.Lost, c.Split, c.Return, c.PNew)
			}
		}
	}
}
