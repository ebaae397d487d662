package fit

import (
	"math"

	"github.com/rcm-dev/rcm/router"
)

const nf = router.Features

// logistic fits w to rows by Newton's method on the L2-penalised log loss
// (the bias unpenalised). lambda is the penalty's weight per row's worth
// of loss; rows of real sessions weigh real times a synthetic row, so that
// the bench's many synthetic calls do not outvote people's sessions.
func logistic(rows []weighted, lambda float64) [nf]float64 {
	var w [nf]float64
	for iter := 0; iter < 50; iter++ {
		var g [nf]float64
		var h [nf][nf]float64
		for k := 1; k < nf; k++ {
			g[k] = lambda * w[k]
			h[k][k] = lambda
		}
		for _, r := range rows {
			p := router.Prob(&w, &r.X)
			y := 0.0
			if r.Y {
				y = 1
			}
			d := (p - y) * r.W
			v := max(p*(1-p), 1e-9) * r.W
			for a := 0; a < nf; a++ {
				if r.X[a] == 0 {
					continue
				}
				g[a] += d * r.X[a]
				for b := a; b < nf; b++ {
					h[a][b] += v * r.X[a] * r.X[b]
				}
			}
		}
		for a := 0; a < nf; a++ {
			h[a][a] += 1e-6 // features that never vary (zero columns)
			for b := 0; b < a; b++ {
				h[a][b] = h[b][a]
			}
		}
		step := solve(h, g)
		change := 0.0
		for k := range w {
			w[k] -= step[k]
			change = max(change, math.Abs(step[k]))
		}
		if change < 1e-7 {
			break
		}
	}
	return w
}

// weighted is a row with its weight in the loss.
type weighted struct {
	Row
	W float64
}

// solve returns x with h x = g (Gaussian elimination with partial pivoting;
// h is symmetric positive definite here).
func solve(h [nf][nf]float64, g [nf]float64) [nf]float64 {
	for c := 0; c < nf; c++ {
		p := c
		for r := c + 1; r < nf; r++ {
			if math.Abs(h[r][c]) > math.Abs(h[p][c]) {
				p = r
			}
		}
		h[c], h[p] = h[p], h[c]
		g[c], g[p] = g[p], g[c]
		for r := c + 1; r < nf; r++ {
			f := h[r][c] / h[c][c]
			for k := c; k < nf; k++ {
				h[r][k] -= f * h[c][k]
			}
			g[r] -= f * g[c]
		}
	}
	var x [nf]float64
	for c := nf - 1; c >= 0; c-- {
		s := g[c]
		for k := c + 1; k < nf; k++ {
			s -= h[c][k] * x[k]
		}
		x[c] = s / h[c][c]
	}
	return x
}
