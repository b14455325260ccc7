package bench

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
)

// series is one line of a chart.
type series struct {
	Name  string
	Color string
	X, Y  []float64
	Dots  bool // also mark each point (sweep curves)
}

// palette is colour-blind safe (Okabe–Ito).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"}

const (
	chartW, chartH                 = 640, 300
	padL, padR, padT, padB float64 = 64, 16, 34, 44
)

// lineChart draws series as an inline SVG with axes, ticks and a legend.
// It needs no script and no network, so the report opens anywhere.
func lineChart(id, title, xLabel, yLabel string, ss []series, markX *float64) string {
	xmin, xmax, ymin, ymax := bounds(ss)
	plotW, plotH := chartW-padL-padR, chartH-padT-padB
	sx := func(x float64) float64 { return padL + (x-xmin)/(xmax-xmin)*plotW }
	sy := func(y float64) float64 { return padT + plotH - (y-ymin)/(ymax-ymin)*plotH }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="plot" id="%s" data-plot="%s" viewBox="0 0 %d %d" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="%s">`,
		id, id, chartW, chartH, chartW, chartH, html.EscapeString(title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#fff"/>`, chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold" text-anchor="middle">%s</text>`, chartW/2, html.EscapeString(title))
	for _, t := range ticks(ymin, ymax, 5) {
		y := sy(t)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/>`, padL, padL+plotW, y, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end">%s</text>`, padL-6, y+4, fmtTick(t))
	}
	for _, t := range ticks(xmin, xmax, 6) {
		x := sx(t)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#999"/>`, x, x, padT+plotH, padT+plotH+4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%s</text>`, x, padT+plotH+16, fmtTick(t))
	}
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`, padL, padT, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="12" text-anchor="middle">%s</text>`, padL+plotW/2, chartH-6, html.EscapeString(xLabel))
	fmt.Fprintf(&b, `<text transform="translate(14 %.1f) rotate(-90)" font-size="12" text-anchor="middle">%s</text>`, padT+plotH/2, html.EscapeString(yLabel))
	if markX != nil && *markX >= xmin && *markX <= xmax {
		x := sx(*markX)
		fmt.Fprintf(&b, `<line class="mark" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#000" stroke-dasharray="4 3"/>`, x, x, padT, padT+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11">knee</text>`, x+3, padT+12)
	}
	for i, s := range ss {
		var pts strings.Builder
		for j := range s.X {
			fmt.Fprintf(&pts, "%.1f,%.1f ", sx(s.X[j]), sy(s.Y[j]))
		}
		fmt.Fprintf(&b, `<polyline class="series" data-series="%s" fill="none" stroke="%s" stroke-width="2" points="%s"/>`,
			html.EscapeString(s.Name), s.Color, strings.TrimSpace(pts.String()))
		if s.Dots {
			for j := range s.X {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`, sx(s.X[j]), sy(s.Y[j]), s.Color)
			}
		}
		lx := padL + 10 + float64(i)*150
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`, lx, lx+18, padT+10, padT+10, s.Color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11">%s</text>`, lx+22, padT+14, html.EscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// bounds spans every series; an empty or flat range is widened so the
// scale is defined.
func bounds(ss []series) (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), 0, math.Inf(-1)
	for _, s := range ss {
		for i := range s.X {
			xmin, xmax = min(xmin, s.X[i]), max(xmax, s.X[i])
			ymin, ymax = min(ymin, s.Y[i]), max(ymax, s.Y[i])
		}
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 0, 1
	}
	if math.IsInf(ymax, -1) {
		ymax = 1
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	if ymax <= ymin {
		ymax = ymin + 1
	}
	ymax *= 1.05
	return
}

// ticks returns about n round values covering [lo, hi].
func ticks(lo, hi float64, n int) []float64 {
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/float64(n))))
	for _, m := range []float64{1, 2, 5, 10} {
		if (hi-lo)/(step*m) <= float64(n) {
			step *= m
			break
		}
	}
	var out []float64
	for t := math.Ceil(lo/step) * step; t <= hi+step*1e-9 && len(out) < 50; t += step {
		out = append(out, t)
	}
	return out
}

func fmtTick(t float64) string {
	if math.Abs(t) >= 1e4 {
		return strconv.FormatFloat(t, 'g', 3, 64)
	}
	return strconv.FormatFloat(math.Round(t*1000)/1000, 'f', -1, 64)
}

// cdf returns the empirical CDF of values as a step line: x in the values'
// unit, y in percent.
func cdf(values []float64) (x, y []float64) {
	v := slices.Clone(values)
	slices.Sort(v)
	step := max(1, len(v)/1000) // a thousand steps draw any CDF; more only bloats the page
	for i := 0; i < len(v); i += step {
		x = append(x, v[i], v[i])
		y = append(y, 100*float64(i)/float64(len(v)), 100*float64(min(i+step, len(v)))/float64(len(v)))
	}
	return x, y
}
