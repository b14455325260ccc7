package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// TestBenchChaosReconciles: bench --chaos against serve cuts streams (with
// resets and clean closes), sends malformed and oversized bodies, trickles
// headers and bodies, leaves streams unread and bursts past the queue; the
// server refuses what it must, closes the slow clients, counts every cut as
// an abort, and ends with nothing running, waiting or holding KV blocks.
func TestBenchChaosReconciles(t *testing.T) {
	reftest.Long(t, "bench --chaos against serve")
	if testing.Short() {
		t.Skip("runs chaos against serve for half a minute; skipped with -short")
	}
	base, _ := serveTest(t, "--sim-time-scale", "1", "--max-num-queued-reqs", "40", "--request-read-timeout", "2s")
	cfg := bench.Config{BaseURL: base, Dataset: random(64, 64), RequestRate: 20, Duration: 10 * time.Second, NumPrompts: 200, Seed: 3,
		ScrapeInterval: 500 * time.Millisecond, RequestTimeout: time.Minute}
	var err error
	if cfg.Chaos, err = bench.ParseChaos("cut=0.15,reset=0.5,malformed=0.05,oversized=0.02,slow-headers=0.02,slow-body=0.02,no-read=0.03,burst=300,slow-for=20s"); err != nil {
		t.Fatal(err)
	}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	res.WriteSummary(&out)
	t.Log(out.String())
	ch := res.Passes[0].Chaos
	if ch == nil {
		t.Fatal("no chaos report")
	}
	for _, c := range ch.Checks {
		if !c.OK {
			t.Errorf("did not reconcile: %s (clients %s, server %s)", c.What, c.Client, c.Server)
		}
	}
	for _, f := range []string{"cut", "malformed", "oversized", "slow-headers", "slow-body", "no-read", "burst"} {
		if ch.Faults[f] == 0 {
			t.Errorf("no request was given the %s fault: %v", f, ch.Faults)
		}
	}
	if len(ch.Checks) < 9 || len(ch.Unchecked) > 0 {
		t.Errorf("%d checks, unchecked %v: glassbox exports every family the reconciliation reads", len(ch.Checks), ch.Unchecked)
	}
}

// TestBenchSoak: a short soak against serve reads its memory, goroutines
// and latencies every interval, fits the memory's trend, and draws the
// curves in the HTML report.
func TestBenchSoak(t *testing.T) {
	reftest.Long(t, "bench --soak against serve")
	if testing.Short() {
		t.Skip("soaks serve for several seconds; skipped with -short")
	}
	base, _ := serveTest(t, "--sim-time-scale", "1")
	res, err := bench.Run(context.Background(), bench.Config{BaseURL: base, Dataset: random(64, 64), RequestRate: 10, Duration: 8 * time.Second,
		NumPrompts: 100, Soak: true, ScrapeInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Passes[0].Soak
	if s == nil || len(s.Samples) < 10 {
		t.Fatalf("soak report %+v", s)
	}
	last := s.Samples[len(s.Samples)-1]
	if !(last.RSSMB > 1) || !(last.Goroutines > 1) || s.Verdict == "" {
		t.Errorf("the soak read RSS %v MB, %v goroutines, verdict %q", last.RSSMB, last.Goroutines, s.Verdict)
	}
	var page strings.Builder
	if err := res.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"soak-rss", "soak-goroutines", "soak-latency"} {
		if !strings.Contains(page.String(), `id="`+id+`"`) {
			t.Errorf("the report has no %s chart", id)
		}
	}
	if b, err := res.JSON(false); err != nil || !strings.Contains(string(b), `"rss_slope_mb_per_hour"`) {
		t.Errorf("the JSON result lacks the soak: %v", err)
	}
	t.Logf("%s", s.Verdict)
}
