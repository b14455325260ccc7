package calibrate

import (
	"math"
	"sort"
)

// minimize finds a local minimum of f near x0 by Nelder and Mead's
// simplex method (the fits here have a handful of terms and a smooth,
// cheap objective), restarting from the best point until a restart no
// longer helps. It is deterministic: the same start gives the same answer.
func minimize(f func([]float64) float64, x0 []float64, step float64, iters int) []float64 {
	best, fb := append([]float64(nil), x0...), f(x0)
	for range 6 {
		x, fx := simplex(f, best, step, iters)
		if fx >= fb*(1-1e-9) {
			break
		}
		best, fb = x, fx
	}
	return best
}

func simplex(f func([]float64) float64, x0 []float64, step float64, iters int) ([]float64, float64) {
	n := len(x0)
	type vertex struct {
		x []float64
		f float64
	}
	pts := make([]vertex, n+1)
	for i := range pts {
		x := append([]float64(nil), x0...)
		if i > 0 {
			x[i-1] += step
		}
		pts[i] = vertex{x, f(x)}
	}
	point := func(c []float64, towards []float64, t float64) vertex {
		x := make([]float64, n)
		for j := range x {
			x[j] = c[j] + t*(towards[j]-c[j])
		}
		return vertex{x, f(x)}
	}
	for range iters {
		sort.SliceStable(pts, func(a, b int) bool { return pts[a].f < pts[b].f })
		if math.Abs(pts[n].f-pts[0].f) <= 1e-12*(math.Abs(pts[0].f)+1e-15) {
			break
		}
		c := make([]float64, n) // the centroid of all but the worst
		for _, p := range pts[:n] {
			for j := range c {
				c[j] += p.x[j] / float64(n)
			}
		}
		worst := pts[n]
		r := point(c, worst.x, -1)
		switch {
		case r.f < pts[0].f:
			if e := point(c, worst.x, -2); e.f < r.f {
				pts[n] = e
			} else {
				pts[n] = r
			}
		case r.f < pts[n-1].f:
			pts[n] = r
		default:
			if k := point(c, worst.x, 0.5); k.f < worst.f {
				pts[n] = k
				continue
			}
			for i := 1; i <= n; i++ { // shrink towards the best
				pts[i] = point(pts[0].x, pts[i].x, 0.5)
			}
		}
	}
	sort.SliceStable(pts, func(a, b int) bool { return pts[a].f < pts[b].f })
	return pts[0].x, pts[0].f
}
