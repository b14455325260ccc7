package simulate

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/autoscaler"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/router"
	srvapi "github.com/glassbox-llm/glassbox/internal/server"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// poisson sends samples cycled at rate for d.
func poisson(t *testing.T, rate float64, d time.Duration, samples ...workload.Sample) *workload.Plan {
	t.Helper()
	arr := workload.NewArrivals(0, d, rate, 1, nil, rand.New(rand.NewPCG(3, 4)))
	return workload.OpenLoop(samples, arr, 0, d)
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func ttfts(res *Result) []float64 {
	var out []float64
	for _, o := range res.Outputs {
		if o.Success {
			out = append(out, o.TTFT.Seconds())
		}
	}
	return out
}

// TestRoundRobinFleetSpreadsTheLoad: four replicas behind round robin each
// serve a quarter of the requests, each counted by its own /metrics, and
// four times the rate on four replicas sees the latency of one replica at
// one rate.
func TestRoundRobinFleetSpreadsTheLoad(t *testing.T) {
	s := workload.Sample{PromptIDs: ids(400, 0), PromptLen: 400, OutputLen: 50}
	one, err := Run(context.Background(), Config{Replica: server(), Plan: poisson(t, 5, time.Minute, s)})
	if err != nil {
		t.Fatal(err)
	}
	four, err := Run(context.Background(), Config{Replica: server(), Replicas: 4, Plan: poisson(t, 20, time.Minute, s)})
	if err != nil {
		t.Fatal(err)
	}
	if len(four.Replicas) != 4 {
		t.Fatalf("%d replicas ran", len(four.Replicas))
	}
	total := 0
	for i, r := range four.Replicas {
		got, _ := gatherText(t, r.Gatherer).Sum("vllm:request_success_total", nil)
		if math.Abs(float64(r.Requests)-float64(len(four.Outputs))/4) > 1 || int(got) != r.Requests {
			t.Errorf("replica %d (%s): routed %d, its metrics count %v, of %d", i, r.Instance, r.Requests, got, len(four.Outputs))
		}
		total += r.Requests
		if want := "simulated-" + string(rune('0'+i)) + ":8000"; r.Instance != want {
			t.Errorf("replica %d is %q, want %q", i, r.Instance, want)
		}
	}
	if total != len(four.Outputs) {
		t.Errorf("routed %d of %d", total, len(four.Outputs))
	}
	a, b := mean(ttfts(one)), mean(ttfts(four))
	if math.Abs(a-b)/a > 0.15 {
		t.Errorf("mean TTFT %.1f ms on one replica at 5/s, %.1f ms on four at 20/s: a fleet should see what its replicas see", a*1e3, b*1e3)
	}
}

// groups are prompts of g groups sharing a long prefix each, in a random
// order (a cycle of groups would meet round robin's cycle).
func groups(g, perGroup, prefix, question, out int) []workload.Sample {
	var ss []workload.Sample
	for q := range perGroup {
		for i := range g {
			p := append(ids(prefix, 1000*i+17*i), ids(question, 500000+1000*q+i)...)
			ss = append(ss, workload.Sample{PromptIDs: p, PromptLen: len(p), OutputLen: out})
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	rng.Shuffle(len(ss), func(i, j int) { ss[i], ss[j] = ss[j], ss[i] })
	return ss
}

func hitRate(t *testing.T, res *Result) float64 {
	var hits, queries float64
	for _, r := range res.Replicas {
		sc := gatherText(t, r.Gatherer)
		h, _ := sc.Sum("vllm:prefix_cache_hits_total", nil)
		q, _ := sc.Sum("vllm:prefix_cache_queries_total", nil)
		hits, queries = hits+h, queries+q
	}
	return hits / queries
}

// TestPrefixAwareRoutingKeepsGroupsTogether: sixteen groups of prompts
// share 2,000-token prefixes, on four replicas whose KV caches hold 12,000
// tokens each: all the prefixes fit the fleet, not one replica. Round
// robin and random scatter each group over every replica, which keeps
// evicting and prefilling them again; the endpoint picker's prefix
// scorers, approximate (the router's own memory) and precise (the engines'
// KV blocks), send a group where its prefix is cached: a higher hit rate
// and a shorter TTFT.
func TestPrefixAwareRoutingKeepsGroupsTogether(t *testing.T) {
	ss := groups(16, 10, 2000, 100, 20)
	srv := server()
	srv.KVCacheMemoryBytes = 12000 * 131072 // Llama-3.1-8B's KV is 128 KiB a token
	results := map[string]*Result{}
	for _, rc := range []struct {
		name string
		cfg  router.Config
	}{
		{"round-robin", router.Config{Policy: router.RoundRobin}},
		{"random", router.Config{Policy: router.Random}},
		{"approximate", router.Config{Policy: router.EndpointPicker}},
		{"precise", router.Config{Policy: router.EndpointPicker, Scorers: []router.Scorer{{Type: router.QueueScorer, Weight: 2},
			{Type: router.KVCacheScorer, Weight: 2}, {Type: router.PrecisePrefixScorer, Weight: 3}}}},
	} {
		res, err := Run(context.Background(), Config{Replica: srv, Replicas: 4, Router: rc.cfg, Plan: poisson(t, 12, 40*time.Second, ss...)})
		if err != nil {
			t.Fatalf("%s: %v", rc.name, err)
		}
		results[rc.name] = res
		t.Logf("%-12s hit rate %.2f, mean TTFT %.0f ms", rc.name, hitRate(t, res), 1e3*mean(ttfts(res)))
	}
	for _, aware := range []string{"approximate", "precise"} {
		for _, blind := range []string{"round-robin", "random"} {
			a, b := results[aware], results[blind]
			if hitRate(t, a) < hitRate(t, b)+0.1 {
				t.Errorf("%s's prefix hit rate %.2f, %s's %.2f: prefix-aware routing should hit more", aware, hitRate(t, a), blind, hitRate(t, b))
			}
			if mean(ttfts(a)) > 0.8*mean(ttfts(b)) {
				t.Errorf("%s's mean TTFT %.0f ms, %s's %.0f ms", aware, 1e3*mean(ttfts(a)), blind, 1e3*mean(ttfts(b)))
			}
		}
	}
}

// TestLeastRequestsAvoidsTheSlowReplica: with every fourth request a long
// prefill, round robin sends them all to one replica, which queues; least
// requests sends new work where less is outstanding.
func TestLeastRequestsAvoidsTheSlowReplica(t *testing.T) {
	long := workload.Sample{PromptIDs: ids(3500, 0), PromptLen: 3500, OutputLen: 400}
	short := workload.Sample{PromptIDs: ids(100, 9000), PromptLen: 100, OutputLen: 20}
	p := poisson(t, 24, time.Minute, long, short, short, short)
	waits := map[string]float64{}
	for _, pol := range []string{router.RoundRobin, router.LeastRequests} {
		res, err := Run(context.Background(), Config{Replica: server(), Replicas: 4, Router: router.Config{Policy: pol}, Plan: p})
		if err != nil {
			t.Fatal(err)
		}
		var longest float64
		for _, o := range res.Outputs {
			longest = max(longest, o.Latency.Seconds())
		}
		waits[pol] = longest
	}
	if waits[router.LeastRequests] > 0.7*waits[router.RoundRobin] {
		t.Errorf("slowest answer %.1f s with least requests, %.1f s with round robin", waits[router.LeastRequests], waits[router.RoundRobin])
	}
}

// TestAutoscalerFollowsABurst: a burst far over one replica's capacity
// makes requests wait; the HPA on vllm:num_requests_waiting adds replicas,
// each ready after its start-up delay and then given work, and removes
// them once the burst is over and the stabilisation window has passed.
func TestAutoscalerFollowsABurst(t *testing.T) {
	s := workload.Sample{PromptIDs: ids(1500, 0), PromptLen: 1500, OutputLen: 100}
	burst := &workload.Plan{Prompts: []workload.Sample{s}}
	var offs []time.Duration
	for i := range 3000 { // 50 requests a second for a minute
		offs = append(offs, time.Duration(i)*20*time.Millisecond)
	}
	for i := range 60 { // then a trickle for ten minutes
		offs = append(offs, time.Minute+time.Duration(i)*10*time.Second)
	}
	burst.Stages = []workload.Stage{{Offsets: offs, Duration: 11 * time.Minute}}
	rc := server()
	rc.MaxNumSeqs = 32
	as := autoscaler.Defaults(autoscaler.HPA)
	as.ScaleDownStabilization = 2 * time.Minute
	res, err := Run(context.Background(), Config{Replica: rc, Plan: burst, Router: router.Config{Policy: router.LeastRequests},
		Autoscaler: &as, StartupDelay: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scaling) < 2 || res.Scaling[0].To <= 1 {
		t.Fatalf("scaling %+v: the burst should have added replicas", res.Scaling)
	}
	peak := 0
	for _, e := range res.Scaling {
		peak = max(peak, e.To)
	}
	if peak != as.MaxReplicas {
		t.Errorf("peak %d replicas, want the maximum %d for %v", peak, as.MaxReplicas, res.Scaling)
	}
	if last := res.Scaling[len(res.Scaling)-1]; last.To >= peak {
		t.Errorf("never scaled down after the burst: %+v", res.Scaling)
	}
	for _, r := range res.Replicas[1:] {
		if d := r.Ready.Sub(r.Started); d != 30*time.Second {
			t.Errorf("%s ready %v after it started, want the 30 s start-up", r.Instance, d)
		}
		if r.Requests == 0 {
			t.Errorf("%s got no requests", r.Instance)
		}
	}
	for _, o := range res.Outputs {
		if !o.Success {
			t.Fatalf("a request failed: %+v", o)
		}
	}
}

// TestFleetSeriesHasAnInstancePerReplica: --metrics-out of a fleet labels
// each replica's engine and GPU series with its own instance.
func TestFleetSeriesHasAnInstancePerReplica(t *testing.T) {
	series := NewSeries(5 * time.Second)
	_, err := Run(context.Background(), Config{Replica: server(), Replicas: 3, Series: series,
		Plan: poisson(t, 6, 30*time.Second, workload.Sample{PromptIDs: ids(200, 0), PromptLen: 200, OutputLen: 20})})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := series.WriteOpenMetrics(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for i := range 3 {
		inst := `instance="simulated-` + string(rune('0'+i)) + `:8000"`
		for _, job := range []string{`job="glassbox"`, `job="dcgm"`} {
			if !strings.Contains(text, inst+","+job) {
				t.Errorf("no %s series of %s", job, inst)
			}
		}
		if !strings.Contains(text, `Hostname="simulated-`+string(rune('0'+i))+`"`) {
			t.Errorf("no dcgm-exporter Hostname of replica %d", i)
		}
	}
}

// TestUnroutedWithoutReplicas: with the fleet at zero (KEDA's minimum 0
// and no request yet waiting, which no replica can report), the gateway
// has no endpoint and refuses at once.
func TestUnroutedWithoutReplicas(t *testing.T) {
	as := autoscaler.Defaults(autoscaler.KEDA)
	as.MinReplicas = 0
	res, err := Run(context.Background(), Config{Replica: server(), Autoscaler: &as,
		Plan: onePlan([]time.Duration{time.Second, 2 * time.Second}, workload.Sample{PromptIDs: ids(10, 0), PromptLen: 10, OutputLen: 2})})
	if err != nil {
		t.Fatal(err)
	}
	if res.Unrouted != 2 || res.Outputs[0].Success || !strings.Contains(res.Outputs[0].Error, "no replica") {
		t.Errorf("unrouted %d, first output %+v", res.Unrouted, res.Outputs[0])
	}
}

// TestPreciseRoutingFindsALoRAAdaptersBlocks: every request goes to a LoRA
// adapter, eight prompts each sent twice, the second round after the first
// has finished, over four replicas routed by the precise prefix scorer
// alone. The engines cache the adapter's blocks under its own namespace,
// so the scorer must hash the prompt in that namespace to find them: each
// second send then lands where its first one ran and hits (the base
// model's hashes would find nothing, and the picks would be random).
func TestPreciseRoutingFindsALoRAAdaptersBlocks(t *testing.T) {
	srv := server()
	srv.LoRA = &replica.LoRA{Modules: []srvapi.LoRAModule{{Name: "sql", Path: "/adapters/sql"}}, MaxLoRAs: 1, MaxRank: 16}
	var samples []workload.Sample
	for i := range 8 {
		samples = append(samples, workload.Sample{PromptIDs: ids(1024, 137*i), PromptLen: 1024, OutputLen: 16})
	}
	var offsets []time.Duration
	for round := range 2 {
		for i := range 8 {
			offsets = append(offsets, time.Duration(round)*20*time.Second+time.Duration(i)*100*time.Millisecond)
		}
	}
	plan := onePlan(offsets, samples...)
	plan.LoRA = []workload.LoRASplit{{Name: "sql", Split: 1}}
	res, err := Run(context.Background(), Config{Replica: srv, Replicas: 4, Plan: plan,
		Router: router.Config{Policy: router.EndpointPicker, Scorers: []router.Scorer{{Type: router.PrecisePrefixScorer, Weight: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	// Each second send finds all 63 full blocks of its prompt but the last
	// token's: 8·1008 of 16·1024 prompt tokens.
	if got := hitRate(t, res); got < 0.45 {
		t.Errorf("prefix hit rate %.2f, want 8·1008/(16·1024) = 0.49: the second sends missed their adapter's blocks", got)
	}
}
