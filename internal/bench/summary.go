package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// metricTitles are vLLM's section headers and short names.
var metricTitles = map[string][2]string{
	"ttft":                        {"Time to First Token", "TTFT"},
	"tpot":                        {"Time per Output Token (excl. 1st token)", "TPOT"},
	"itl":                         {"Inter-token Latency", "ITL"},
	"e2el":                        {"End-to-end Latency", "E2EL"},
	"client_queue_time":           {"Client-side Queueing", "Client Queue Time"},
	"e2el_including_client_queue": {"Queue-inclusive End-to-end Latency", "E2EL incl. Client Queue"},
}

// WriteSummary prints vLLM's result table for each pass, the server's view
// beside it, and the sweep curve.
func (r *Result) WriteSummary(w io.Writer) {
	for _, p := range r.Passes {
		r.writePass(w, p)
	}
	if r.Sweep != nil {
		r.writeSweep(w)
	}
}

func (r *Result) writePass(w io.Writer, p *Pass) {
	m := p.Metrics
	line := func(label string, v any) {
		switch x := v.(type) {
		case float64:
			fmt.Fprintf(w, "%-40s %-10.2f\n", label, x)
		default:
			fmt.Fprintf(w, "%-40s %-10v\n", label, x)
		}
	}
	header := " Serving Benchmark Result "
	if p.Name != "main" {
		header = fmt.Sprintf(" %s pass ", p.Name)
	}
	fmt.Fprintln(w, center(header, "=", 50))
	line("Successful requests:", m.Completed)
	line("Failed requests:", m.Failed)
	if p.MaxConcurrency > 0 {
		line("Maximum request concurrency:", p.MaxConcurrency)
	}
	if !math.IsInf(p.RequestRate, 1) {
		line("Request rate configured (RPS):", p.RequestRate)
	}
	line("Benchmark duration (s):", m.Duration.Seconds())
	line("Total input tokens:", m.TotalInput)
	line("Total generated tokens:", m.TotalOutput)
	line("Request throughput (req/s):", m.RequestThroughput)
	if m.RequestGoodput != nil {
		line("Request goodput (req/s):", *m.RequestGoodput)
	}
	line("Output token throughput (tok/s):", m.OutputThroughput)
	line("Peak output token throughput (tok/s):", m.MaxOutputTokensPerS)
	line("Peak concurrent requests:", float64(m.MaxConcurrentRequests))
	line("Total token throughput (tok/s):", m.TotalTokenThroughput)
	for _, name := range metricNames {
		d, ok := m.Dists[name]
		if !ok || !selected(r.Config.PercentileMetrics, name) {
			continue
		}
		t := metricTitles[name]
		fmt.Fprintln(w, center(t[0], "-", 50))
		line(fmt.Sprintf("Mean %s (ms):", t[1]), d.Mean)
		line(fmt.Sprintf("Median %s (ms):", t[1]), d.Median)
		for _, pc := range d.Percentiles {
			line(fmt.Sprintf("P%s %s (ms):", percentileWord(pc.P), t[1]), pc.Value)
		}
	}
	if len(p.Turns) > 0 {
		writeTurns(w, p)
	}
	if p.Sessions != nil {
		writeSessions(w, p.Sessions)
	}
	if len(p.Stages) > 0 {
		writeStages(w, p)
	}
	if p.Saturation > 0 {
		fmt.Fprintf(w, "Sweep: the probe's %d requests found saturation at %.2f req/s; the stages ran %.2f to %.2f req/s\n",
			len(p.Probe), p.Saturation, p.Schedule[0].Rate, p.Schedule[len(p.Schedule)-1].Rate)
	}
	if p.Server != nil {
		writeServer(w, p, line)
	}
	fmt.Fprintln(w, strings.Repeat("=", 50))
	if p.Chaos != nil {
		p.Chaos.write(w)
	}
	if p.Soak != nil {
		p.Soak.write(w)
	}
}

// writeStages prints one line per inference-perf stage.
func writeStages(w io.Writer, p *Pass) {
	fmt.Fprintln(w, center("Stages", "-", 50))
	fmt.Fprintf(w, "%-5s %7s %7s %9s %9s %9s %9s\n", "stage", "req/s", "done", "TTFT ms", "TPOT ms", "E2EL ms", "achieved")
	for _, st := range p.Stages {
		m := st.Metrics
		mean := func(name string) float64 { return m.Dists[name].Mean }
		fmt.Fprintf(w, "%-5d %7.2f %7d %9.1f %9.2f %9.0f %9.2f\n", st.Stage, st.Rate, m.Completed, mean("ttft"), mean("tpot"), mean("e2el"), m.RequestThroughput)
	}
}

// writeServer prints the server's view with the client's numbers beside
// it, so a gap (network, client, queueing) shows at once.
func writeServer(w io.Writer, p *Pass, line func(string, any)) {
	v, m := p.Server, p.Metrics
	fmt.Fprintln(w, center("Server view (/metrics)", "-", 50))
	fmt.Fprintf(w, "%-28s %10s %10s\n", "", "server", "client")
	fmt.Fprintf(w, "%-28s %10.0f %10d\n", "Requests finished:", v.RequestSuccess, m.Completed+m.Failed)
	fmt.Fprintf(w, "%-28s %10.0f %10d\n", "Prompt tokens:", v.PromptTokens, m.TotalInput)
	fmt.Fprintf(w, "%-28s %10.0f %10d\n", "Generation tokens:", v.GenerationTokens, m.TotalOutput)
	pair := func(label string, h ServerHist, d Dist) {
		if h.Count == 0 {
			return
		}
		fmt.Fprintf(w, "%-28s %10.2f %10.2f\n", "Mean "+label+" (ms):", h.Mean, d.Mean)
		for _, pc := range h.Percentiles {
			c := "-"
			if pc.P == 50 {
				c = fmt.Sprintf("%.2f", d.Median)
			}
			for _, dp := range d.Percentiles {
				if dp.P == pc.P {
					c = fmt.Sprintf("%.2f", dp.Value)
				}
			}
			fmt.Fprintf(w, "%-28s %10.2f %10s\n", "P"+percentileWord(pc.P)+" "+label+" (ms):", pc.Value, c)
		}
	}
	pair("TTFT", v.TTFT, m.Dists["ttft"])
	pair("E2EL", v.E2E, m.Dists["e2el"])
	if v.Queue.Count > 0 {
		line("Server mean queue time (ms):", v.Queue.Mean)
		for _, pc := range v.Queue.Percentiles {
			line("Server P"+percentileWord(pc.P)+" queue time (ms):", pc.Value)
		}
	}
	line("Preemptions:", v.Preemptions)
	if v.PrefixCacheHitRate != nil {
		line("Prefix cache hit rate (%):", 100**v.PrefixCacheHitRate)
	}
	line("Peak KV cache usage (%):", 100*v.PeakKVUsage)
	line("Peak requests waiting:", v.PeakWaiting)
	line("Peak requests running:", v.PeakRunning)
	line("Mean requests waiting:", v.MeanWaiting)
	line("Mean requests running:", v.MeanRunning)
}

func (r *Result) writeSweep(w io.Writer) {
	s := r.Sweep
	fmt.Fprintln(w, center(" Sweep ", "=", 86))
	fmt.Fprintf(w, "%-12s %10s %10s %12s %12s %12s %10s\n", "pass", "rate", "req/s", "out tok/s", "mean TTFT", "mean TPOT", "SLOs met")
	for i, pt := range s.Points {
		m := pt.Pass.Metrics
		met := "-"
		if !r.Config.Goodput.Empty() {
			met = fmt.Sprintf("%.0f%%", 100*pt.Attained)
		}
		mark := ""
		if i == s.Knee {
			mark = "  <- knee"
		}
		fmt.Fprintf(w, "%-12s %10.2f %10.2f %12.1f %12.2f %12.2f %10s%s\n", pt.Pass.Name, pt.Rate, m.RequestThroughput,
			m.OutputThroughput, m.Dists["ttft"].Mean, m.Dists["tpot"].Mean, met, mark)
	}
	switch {
	case r.Config.Goodput.Empty():
		fmt.Fprintln(w, "No --goodput SLOs were given, so there is no knee.")
	case s.Knee < 0:
		fmt.Fprintf(w, "No pass had %.0f%% of its requests within the SLOs: no knee.\n", 100*r.Config.SLOAttained)
	default:
		fmt.Fprintf(w, "Knee: %.2f req/s, the highest rate with %.0f%% of requests within the SLOs.\n", s.KneeRate(), 100*r.Config.SLOAttained)
	}
	fmt.Fprintln(w, strings.Repeat("=", 86))
}

func center(s, pad string, n int) string {
	if len(s) >= n {
		return s
	}
	left := (n - len(s)) / 2
	return strings.Repeat(pad, left) + s + strings.Repeat(pad, n-len(s)-left)
}
