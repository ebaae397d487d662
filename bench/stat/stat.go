package stat

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Num is a metric value; NaN (not measured, nothing to measure) is written
// as JSON null.
type Num float64

// MarshalJSON writes the value with at most six decimals, NaN as null.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, math.Round(f*1e6)/1e6, 'f', -1, 64), nil
}

// UnmarshalJSON reads a number or null (NaN).
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	*n = Num(f)
	return err
}

func Mean(xs []float64) Num {
	m, _, _ := MeanCI(xs)
	return Num(m)
}

// Percentile returns the p-th percentile (0..100) of xs by linear
// interpolation between closest ranks; NaN for no values. xs is sorted.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	r := p / 100 * float64(len(xs)-1)
	lo := int(math.Floor(r))
	hi := min(lo+1, len(xs)-1)
	return xs[lo] + (r-float64(lo))*(xs[hi]-xs[lo])
}

// MeanCI returns the mean of xs and its 95% interval by Student's t with
// len(xs)-1 degrees of freedom (sessions are the independent units). With
// one value the interval is that value; with none, all are NaN.
func MeanCI(xs []float64) (mean, lo, hi float64) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n == 1 {
		return mean, mean, mean
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	half := t975(n-1) * math.Sqrt(ss/float64(n-1)/float64(n))
	return mean, mean - half, mean + half
}

// t975 is the 97.5% quantile of Student's t with df degrees of freedom; past
// the table it takes the next smaller tabulated df (a slightly wider
// interval).
func t975(df int) float64 {
	table := [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	switch {
	case df <= len(table):
		return table[df-1]
	case df < 40:
		return table[len(table)-1]
	case df < 60:
		return 2.021
	case df < 120:
		return 2.000
	}
	return 1.980
}

func F3(n Num) string { return Format(n, 3) }

func F2(n Num) string { return Format(n, 2) }

func Format(n Num, prec int) string {
	if math.IsNaN(float64(n)) {
		return "–"
	}
	return fmt.Sprintf("%.*f", prec, float64(n))
}

func WithCI(n Num, ci [2]Num) string {
	if math.IsNaN(float64(n)) {
		return "–"
	}
	if ci[0] == ci[1] {
		return F3(n)
	}
	return fmt.Sprintf("%s [%s, %s]", F3(n), F3(ci[0]), F3(ci[1]))
}

// mdHeader starts a Markdown table: the header row and its alignment row;
// a column named with a trailing ":" is right-aligned (numbers).
func MdHeader(w io.Writer, cols ...string) {
	var names, align strings.Builder
	for _, c := range cols {
		name, right := strings.CutSuffix(c, ":")
		names.WriteString("| " + name + " ")
		if right {
			align.WriteString("|---:")
		} else {
			align.WriteString("|---")
		}
	}
	fmt.Fprintf(w, "%s|\n%s|\n", names.String(), align.String())
}

func JoinFloats(fs []float64) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprintf("%g", f)
	}
	return strings.Join(parts, ", ")
}
