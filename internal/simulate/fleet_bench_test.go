package simulate

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/router"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// fleetLoad is vLLM bench's default random dataset (1,024 prompt tokens,
// 128 output) at rate for d: every prompt a run of ids from a random
// offset of one shared pool, as vLLM's random dataset draws them, so
// 360,000 distinct prompts need no more memory than the pool.
func fleetLoad(rate float64, d time.Duration) *workload.Plan {
	rng := rand.New(rand.NewPCG(11, 12))
	pool := make([]int, 1<<24)
	for i := range pool {
		pool[i] = 300 + rng.IntN(WideVocab-300)
	}
	arr := workload.NewArrivals(0, d, rate, 1, nil, rng)
	p := workload.OpenLoop(nil, arr, 0, d)
	n := len(p.Stages[0].Offsets)
	p.Prompts = make([]workload.Sample, n)
	for i := range p.Prompts {
		off := rng.IntN(len(pool) - 1024)
		p.Prompts[i] = workload.Sample{PromptIDs: pool[off : off+1024 : off+1024], PromptLen: 1024, OutputLen: 128}
	}
	return p
}

func benchFleet(b *testing.B, replicas int, rate float64, d time.Duration, rt router.Config) {
	plan := fleetLoad(rate, d)
	rc := server()
	rc.MaxNumSeqs, rc.MaxNumBatchedTokens = 256, 2048
	var virt, wall time.Duration
	var steps uint64
	cpu0 := cpuTime()
	for b.Loop() {
		res, err := Run(context.Background(), Config{Replica: rc, Plan: plan, Replicas: replicas, Router: rt})
		if err != nil {
			b.Fatal(err)
		}
		virt += res.Duration
		wall += res.Wall
		steps += res.Steps
	}
	b.ReportMetric(float64(plan.NumRequests()*b.N)/wall.Seconds(), "requests/s")
	b.ReportMetric(virt.Seconds()/wall.Seconds(), "x-real-time")
	b.ReportMetric(wall.Seconds()/float64(steps)*1e9, "ns/step")
	// The process's CPU time (the GC's included) tells runs on a loaded
	// machine apart better than the wall's.
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(steps)*1e9, "cpu-ns/step")
}

// BenchmarkFleet16x1h is the fleet's speed goal: 16 replicas of Llama-3.1-8B
// on H100 behind round robin, one hour of virtual time at 100 requests a
// second (360,000 requests), in under a minute on two cores.
func BenchmarkFleet16x1h(b *testing.B) {
	benchFleet(b, 16, 100, time.Hour, router.Config{Policy: router.RoundRobin})
}

// BenchmarkFleet16x1hPicker is the same behind the endpoint picker's
// default profile (its approximate prefix index and 50 ms refreshes).
func BenchmarkFleet16x1hPicker(b *testing.B) {
	benchFleet(b, 16, 100, time.Hour, router.Config{Policy: router.EndpointPicker})
}

// BenchmarkOneReplica1h is one of those replicas alone at its share of the
// load (6.25 requests a second for an hour): requests per wall second to
// set the fleet's against.
func BenchmarkOneReplica1h(b *testing.B) {
	benchFleet(b, 1, 100.0/16, time.Hour, router.Config{})
}

// BenchmarkFleet16x5m is the fleet of BenchmarkFleet16x1h for five minutes
// of virtual time (30,000 requests): the same steps in a twelfth of the
// time, to profile and compare changes with.
func BenchmarkFleet16x5m(b *testing.B) {
	benchFleet(b, 16, 100, 5*time.Minute, router.Config{Policy: router.RoundRobin})
}
