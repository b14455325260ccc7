package simulate

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// streamServer is server() with a frontend of the API server's per-token
// work alone.
func streamServer(stream time.Duration) (rc replica.Config) {
	rc = server()
	hw, _ := profiles.LookupHardware("h100")
	c := hw.Calib
	c.Frontend = profiles.Frontend{Stream: stream}
	rc.Sim.Calib = &c
	return rc
}

// TestAPIServerTakesTokensInTurn: the API server handles a step's tokens
// one after another: eight requests prefilled in one step get their first
// tokens Stream apart, in the step's order; the GPU's clock does not wait
// for it (the steps are those of a frontend without it); and a server
// slower than the tokens come falls behind, every token of the run passing
// through it.
func TestAPIServerTakesTokensInTurn(t *testing.T) {
	const n, out = 8, 20
	var samples []workload.Sample
	for i := range n {
		samples = append(samples, workload.Sample{PromptIDs: ids(100, 100*i), PromptLen: 100, OutputLen: out})
	}
	at := make([]time.Duration, n) // all at once
	run := func(stream time.Duration) *Result {
		t.Helper()
		res, err := Run(context.Background(), Config{Replica: streamServer(stream), Plan: onePlan(at, samples...)})
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range res.Outputs {
			if !o.Success || o.OutputTokens != out {
				t.Fatalf("request %d: %+v", i, o)
			}
		}
		return res
	}
	none := run(0)
	const stream = time.Millisecond
	res := run(stream)
	var ttft []time.Duration
	for i, o := range res.Outputs {
		ttft = append(ttft, o.TTFT)
		if res.Tokens[i].First != none.Tokens[i].First || res.Tokens[i].Last != none.Tokens[i].Last {
			t.Errorf("request %d: the engine sampled its tokens at %v…%v, without the API server's time at %v…%v: it held the GPU up",
				i, res.Tokens[i].First, res.Tokens[i].Last, none.Tokens[i].First, none.Tokens[i].Last)
		}
	}
	slices.Sort(ttft)
	for k := range ttft {
		if want := none.Outputs[0].TTFT + time.Duration(k+1)*stream; ttft[k] != want {
			t.Errorf("first tokens at %v, want the prefill step's end and then one every %v: %v…", ttft, stream, want)
			break
		}
	}
	// A decode step of eight takes a few ms; eight tokens of 1 ms each
	// take longer, so the server falls behind and the last answer waits
	// for every token of the run.
	if last, work := res.Duration, time.Duration(n*out)*stream; last < work {
		t.Errorf("the run ended at %v, before its %d tokens' %v of API server work", last, n*out, work)
	}
	if res.Duration <= none.Duration {
		t.Errorf("with the API server behind, the run took %v against %v without it", res.Duration, none.Duration)
	}
}

// TestArrivalSpread: each request's arrival is spread evenly over
// Arrival × (1 ± ArrivalSpread), its mean the arrival, a later send may
// reach the engine first, and a replay is the same every time.
func TestArrivalSpread(t *testing.T) {
	rc := server()
	hw, _ := profiles.LookupHardware("h100")
	c := hw.Calib
	c.Frontend = profiles.Frontend{Arrival: 10 * time.Millisecond, ArrivalSpread: 0.5}
	rc.Sim.Calib = &c
	const n = 200
	var samples []workload.Sample
	at := make([]time.Duration, n)
	for i := range n {
		samples = append(samples, workload.Sample{PromptIDs: ids(50, i), PromptLen: 50, OutputLen: 2})
		at[i] = time.Duration(i) * time.Millisecond // 1 ms apart: a 5 ms spread passes earlier sends
	}
	run := func() *Result {
		res, err := Run(context.Background(), Config{Replica: rc, Plan: onePlan(at, samples...)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run()
	var sum time.Duration
	lo, hi, passed := time.Hour, time.Duration(0), 0
	for i, tt := range res.Tokens {
		a := tt.Arrival
		sum += a
		lo, hi = min(lo, a), max(hi, a)
		if i > 0 && res.Outputs[i].Start.Add(a).Before(res.Outputs[i-1].Start.Add(res.Tokens[i-1].Arrival)) {
			passed++
		}
		if !res.Outputs[i].Success {
			t.Fatalf("request %d failed: %+v", i, res.Outputs[i])
		}
	}
	if mean := sum / n; (mean-10*time.Millisecond).Abs() > 100*time.Microsecond || lo < 5*time.Millisecond || hi > 15*time.Millisecond ||
		lo > 5200*time.Microsecond || hi < 14800*time.Microsecond {
		t.Errorf("arrivals from %v to %v, mean %v: want 5–15 ms covered, mean 10 ms", lo, hi, mean)
	}
	if passed == 0 {
		t.Error("no request reached the engine before one sent earlier")
	}
	again := run()
	for i := range res.Outputs {
		if res.Outputs[i].TTFT != again.Outputs[i].TTFT {
			t.Fatalf("request %d: TTFT %v, then %v", i, res.Outputs[i].TTFT, again.Outputs[i].TTFT)
		}
	}
}
