package bench

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// WriteHTML writes a self-contained report: the summary table and inline
// SVG plots (latency distributions, throughput and concurrency over time,
// the server's gauges over time, and the sweep curve). It loads nothing
// from the network and runs no script, so it opens offline anywhere.
func (r *Result) WriteHTML(w io.Writer) error {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>glassbox bench report</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;color:#222;background:#fff}h1{font-size:22px}h2{font-size:17px;margin-top:28px}
pre{background:#f6f6f6;padding:12px;font-size:12px;overflow:auto}.grid{display:flex;flex-wrap:wrap;gap:12px}svg.plot{border:1px solid #ddd}</style>
</head><body data-ready="1">`)
	fmt.Fprintf(&b, "<h1>glassbox bench: %s on %s</h1>", html.EscapeString(r.ModelID), html.EscapeString(r.Config.BaseURL+r.Config.Endpoint))
	var sum strings.Builder
	r.WriteSummary(&sum)
	fmt.Fprintf(&b, "<h2>Summary</h2><pre>%s</pre>", html.EscapeString(sum.String()))
	if r.Sweep != nil {
		b.WriteString("<h2>Sweep: throughput and latency against request rate</h2><div class=\"grid\">")
		b.WriteString(r.sweepCharts())
		b.WriteString("</div>")
	}
	p := r.focusPass()
	fmt.Fprintf(&b, "<h2>Latency distributions (%s pass)</h2><div class=\"grid\">", html.EscapeString(p.Name))
	for i, name := range []string{"ttft", "tpot", "itl", "e2el"} {
		x, y := cdf(p.Metrics.Dists[name].Values)
		t := metricTitles[name]
		b.WriteString(lineChart("cdf-"+name, t[0]+" ("+t[1]+")", t[1]+" (ms)", "requests ≤ x (%)",
			[]series{{Name: t[1], Color: palette[i], X: x, Y: y}}, nil))
	}
	b.WriteString("</div><h2>Throughput over time</h2><div class=\"grid\">")
	b.WriteString(r.timeCharts(p))
	b.WriteString("</div>")
	if p.Server != nil {
		b.WriteString("<h2>Server gauges over time (/metrics)</h2><div class=\"grid\">")
		b.WriteString(serverCharts(p.Server))
		b.WriteString("</div>")
	}
	if p.Soak != nil {
		fmt.Fprintf(&b, "<h2>Soak: %s</h2><div class=\"grid\">", html.EscapeString(p.Soak.Verdict))
		b.WriteString(soakCharts(p.Soak))
		b.WriteString("</div>")
	}
	b.WriteString(`<h2>Definitions</h2><p>TTFT: request sent to first streamed chunk with a choice. TPOT: (E2EL − TTFT)/(output tokens − 1), per request, for requests with more than one token. ITL: every gap between consecutive chunks, pooled over requests. E2EL: request sent to last chunk. Peak output throughput: the fullest one-second bin of chunks. These are vllm bench serve's definitions; see docs/bench.md.</p></body></html>`)
	_, err := io.WriteString(w, b.String())
	return err
}

// focusPass is the pass whose detail the report plots: the only pass, or
// in a sweep the knee (else the throughput pass).
func (r *Result) focusPass() *Pass {
	if r.Sweep != nil && r.Sweep.Knee >= 0 {
		return r.Sweep.Points[r.Sweep.Knee].Pass
	}
	if r.Sweep != nil && len(r.Sweep.Points) > 1 {
		return r.Sweep.Points[1].Pass
	}
	return r.Passes[0]
}

func (r *Result) timeCharts(p *Pass) string {
	var x []float64
	for i := range p.Metrics.TokensPerSecond {
		x = append(x, float64(i))
	}
	return lineChart("throughput", "Output tokens per second", "time since start (s)", "tokens/s",
		[]series{{Name: "output tok/s", Color: palette[0], X: x, Y: p.Metrics.TokensPerSecond}}, nil) +
		lineChart("concurrency", "Requests in flight per second", "time since start (s)", "requests",
			[]series{{Name: "concurrent requests", Color: palette[1], X: x, Y: p.Metrics.ConcurrencyPerSecond}}, nil)
}

func serverCharts(v *ServerView) string {
	var t, run, wait, kv []float64
	for _, s := range v.Samples {
		t, run, wait, kv = append(t, s.T), append(run, s.Running), append(wait, s.Waiting), append(kv, 100*s.KVUsage)
	}
	return lineChart("server-queue", "Server: running and waiting requests", "time since start (s)", "requests",
		[]series{{Name: "running", Color: palette[0], X: t, Y: run}, {Name: "waiting", Color: palette[1], X: t, Y: wait}}, nil) +
		lineChart("server-kv", "Server: KV cache usage", "time since start (s)", "KV cache used (%)",
			[]series{{Name: "kv_cache_usage_perc", Color: palette[2], X: t, Y: kv}}, nil)
}

func (r *Result) sweepCharts() string {
	s := r.Sweep
	var rate, tput, otput, ttft, tpot []float64
	for _, pt := range s.Points {
		m := pt.Pass.Metrics
		rate = append(rate, pt.Rate)
		tput = append(tput, m.RequestThroughput)
		otput = append(otput, m.OutputThroughput)
		ttft = append(ttft, m.Dists["ttft"].Mean)
		tpot = append(tpot, m.Dists["tpot"].Mean)
	}
	order := sortedIndex(rate)
	pick := func(v []float64) []float64 {
		out := make([]float64, len(order))
		for i, j := range order {
			out[i] = v[j]
		}
		return out
	}
	var knee *float64
	if s.Knee >= 0 {
		k := s.KneeRate()
		knee = &k
	}
	x := pick(rate)
	return lineChart("sweep-throughput", "Achieved throughput against rate", "request rate (req/s)", "requests/s",
		[]series{{Name: "achieved req/s", Color: palette[0], X: x, Y: pick(tput), Dots: true}, {Name: "offered = achieved", Color: "#999", X: x, Y: x}}, knee) +
		lineChart("sweep-output", "Output token throughput against rate", "request rate (req/s)", "tokens/s",
			[]series{{Name: "output tok/s", Color: palette[2], X: x, Y: pick(otput), Dots: true}}, knee) +
		lineChart("sweep-latency", "Latency against rate", "request rate (req/s)", "ms",
			[]series{{Name: "mean TTFT", Color: palette[1], X: x, Y: pick(ttft), Dots: true}, {Name: "mean TPOT", Color: palette[3], X: x, Y: pick(tpot), Dots: true}}, knee)
}

// sortedIndex returns the indexes of v in increasing order of value.
func sortedIndex(v []float64) []int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && v[idx[j]] < v[idx[j-1]]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	return idx
}
