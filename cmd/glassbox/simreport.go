package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/glassbox-llm/glassbox/internal/simulate"
	"github.com/prometheus/client_golang/prometheus"
)

// writeFleet prints each replica's share and the autoscaler's decisions.
func writeFleet(w io.Writer, res *simulate.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  replica\trequests\tprefix-cache hits\tready\tstopped")
	for _, r := range res.Replicas {
		hits := "–"
		if q, h := promSum(r.Gatherer, "vllm:prefix_cache_queries_total"), promSum(r.Gatherer, "vllm:prefix_cache_hits_total"); q > 0 {
			hits = fmt.Sprintf("%.1f%%", 100*h/q)
		}
		ready, stopped := "–", "–"
		if !r.Ready.IsZero() {
			ready = "+" + r.Ready.Sub(res.Start).Round(time.Second).String()
		}
		if !r.Stopped.IsZero() {
			stopped = "+" + r.Stopped.Sub(res.Start).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\n", r.Instance, r.Requests, hits, ready, stopped)
	}
	tw.Flush()
	if res.Unrouted > 0 {
		fmt.Fprintf(w, "  %d requests found no ready replica (503 at the gateway)\n", res.Unrouted)
	}
	for _, e := range res.Scaling {
		fmt.Fprintf(w, "  autoscaler at +%s: %d → %d replicas (%.0f requests waiting)\n", e.At.Sub(res.Start).Round(time.Second), e.From, e.To, e.Waiting)
	}
}

// promSum totals a family's samples in a registry.
func promSum(g prometheus.Gatherer, name string) float64 {
	mfs, err := g.Gather()
	if err != nil {
		return 0
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}
