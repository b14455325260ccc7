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

// TestAPIServerServesEveryRank: with --data-parallel-size the ranks sit
// behind one API server, as vLLM's: every token of both ranks passes
// through its one queue, so a slow server bounds the run however many
// ranks the GPUs have.
func TestAPIServerServesEveryRank(t *testing.T) {
	const n, out, stream = 16, 20, time.Millisecond
	var samples []workload.Sample
	for i := range n {
		samples = append(samples, workload.Sample{PromptIDs: ids(100, 100*i), PromptLen: 100, OutputLen: out})
	}
	rc := streamServer(stream)
	rc.DataParallelSize = 2
	res, err := Run(context.Background(), Config{Replica: rc, Plan: onePlan(make([]time.Duration, n), samples...)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Replicas) != 2 || res.Replicas[0].Requests == 0 || res.Replicas[1].Requests == 0 {
		t.Fatalf("ranks %+v: want both to serve", res.Replicas)
	}
	if work := time.Duration(n*out) * stream; res.Duration < work {
		t.Errorf("the run ended at %v, before its %d tokens' %v of the one API server's work: each rank had its own", res.Duration, n*out, work)
	}
}
