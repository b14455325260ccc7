package router

import (
	"slices"
	"strings"
	"testing"
)

func eps(n int) []Endpoint {
	out := make([]Endpoint, n)
	for i := range out {
		out[i] = Endpoint{ID: string(rune('a' + i)), Metrics: Metrics{BlockSize: 16, NumBlocks: 1000}}
	}
	return out
}

func prompt(n, from int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

func must(t *testing.T, cfg Config) *Router {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRoundRobinCycles(t *testing.T) {
	r := must(t, Config{Policy: RoundRobin})
	var got []int
	for range 7 {
		got = append(got, r.Pick(&Request{}, eps(3)))
	}
	if want := []int{0, 1, 2, 0, 1, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("round robin picked %v, want %v", got, want)
	}
	// A pool that shrinks keeps cycling over what is left.
	if i := r.Pick(&Request{}, eps(1)); i != 0 {
		t.Errorf("one endpoint left: picked %d", i)
	}
}

func TestLeastRequestsTakesTheIdlest(t *testing.T) {
	r := must(t, Config{Policy: LeastRequests})
	e := eps(4)
	e[0].InFlight, e[1].InFlight, e[2].InFlight, e[3].InFlight = 5, 2, 7, 2
	seen := map[int]bool{}
	for range 100 {
		seen[r.Pick(&Request{}, e)] = true
	}
	if len(seen) != 2 || !seen[1] || !seen[3] {
		t.Errorf("picked %v, want the two endpoints with 2 in flight, both", seen)
	}
}

func TestRandomSpreads(t *testing.T) {
	r := must(t, Config{Policy: Random, Seed: 7})
	counts := make([]int, 4)
	for range 4000 {
		counts[r.Pick(&Request{}, eps(4))]++
	}
	for i, c := range counts {
		if c < 850 || c > 1150 {
			t.Errorf("endpoint %d picked %d times of 4000", i, c)
		}
	}
}

// TestQueueScorerNormalises: the shortest queue scores 1, the longest 0,
// linearly between (llm-d's queue-scorer); with the picker's KV scorer
// alongside, a lighter KV cache breaks a tie in queues.
func TestQueueAndKVScorers(t *testing.T) {
	r := must(t, Config{Policy: EndpointPicker, Scorers: []Scorer{{QueueScorer, 1}}})
	e := eps(3)
	e[0].Metrics.Waiting, e[1].Metrics.Waiting, e[2].Metrics.Waiting = 10, 0, 4
	if i := r.Pick(&Request{}, e); i != 1 {
		t.Errorf("queue scorer picked %d, want the empty queue", i)
	}
	r.Pick(&Request{}, e)
	if got := r.scores; got[0] != 0 || got[1] != 1 || got[2] != 0.6 {
		t.Errorf("queue scores %v, want [0 1 0.6]", got)
	}
	r = must(t, Config{Policy: EndpointPicker, Scorers: []Scorer{{QueueScorer, 2}, {KVCacheScorer, 2}}})
	e = eps(3)
	e[0].Metrics.KVUsage, e[1].Metrics.KVUsage, e[2].Metrics.KVUsage = 0.9, 0.2, 0.5
	if i := r.Pick(&Request{}, e); i != 1 {
		t.Errorf("equal queues: picked %d, want the emptiest KV cache", i)
	}
}

// TestApproximatePrefixSticks: the picker sends a prompt sharing a prefix
// with an earlier one where it sent that one, in proportion to the share of
// 64-token blocks matched, until the server's LRU of blocks forgets it.
func TestApproximatePrefixSticks(t *testing.T) {
	r := must(t, Config{Policy: EndpointPicker, Scorers: []Scorer{{PrefixScorer, 3}, {QueueScorer, 1}}, Seed: 1})
	e := eps(4)
	first := r.Pick(&Request{Model: "m", Prompt: prompt(640, 0)}, e)
	for range 20 {
		// Another question after the same 512-token system prompt.
		p := append(prompt(512, 0), prompt(128, 10000)...)
		if i := r.Pick(&Request{Model: "m", Prompt: p}, e); i != first {
			t.Fatalf("the shared prefix went to %d, not %d where the first went", i, first)
		}
	}
	r.Pick(&Request{Model: "m", Prompt: append(prompt(512, 0), prompt(128, 20000)...)}, e)
	if got, want := r.scores[first], 3*8.0/10+1; got != want {
		t.Errorf("score %v, want 3 × 8 of 10 blocks matched + the neutral queue score = %v", got, want)
	}
	// Another model's identical prompt hashes apart.
	r.Pick(&Request{Model: "other", Prompt: prompt(640, 0)}, e)
	for i, s := range r.scores {
		if s != 1 {
			t.Errorf("another model's prompt scored %v on %d; want no prefix match", s, i)
		}
	}
}

func TestPrefixLRUForgets(t *testing.T) {
	r := must(t, Config{Policy: EndpointPicker, Scorers: []Scorer{{PrefixScorer, 1}}, PrefixLRUCapacity: 4})
	e := eps(1)
	r.Pick(&Request{Prompt: prompt(64*4, 0)}, e)
	r.Pick(&Request{Prompt: prompt(64*4, 1000)}, e) // four new blocks evict the first prompt's four
	r.Pick(&Request{Prompt: prompt(64*4, 0)}, e)
	if r.scores[0] != 0 {
		t.Errorf("score %v for a prompt the LRU evicted", r.scores[0])
	}
	r.Pick(&Request{Prompt: prompt(64*4, 0)}, e)
	if r.scores[0] != 1 {
		t.Errorf("score %v for the prompt just sent again", r.scores[0])
	}
	r.Forget(e[0].ID)
	if len(r.prefix.byHash) != 0 || len(r.prefix.servers) != 0 {
		t.Errorf("a forgotten server leaves %d hashes", len(r.prefix.byHash))
	}
}

type fakeKV map[string]int

func (f fakeKV) CachedTokens(ep string, _ *Request) int { return f[ep] }

func TestPrecisePrefixReadsTheCaches(t *testing.T) {
	kv := fakeKV{"a": 0, "b": 480, "c": 160}
	r := must(t, Config{Policy: EndpointPicker, Scorers: []Scorer{{PrecisePrefixScorer, 3}, {QueueScorer, 2}}, KV: kv})
	e := eps(3)
	if i := r.Pick(&Request{Prompt: prompt(500, 0)}, e); i != 1 {
		t.Errorf("picked %d, want the replica holding 480 of 500 tokens", i)
	}
	if got := r.scores[1]; got != 3*30.0/31+2 {
		t.Errorf("score %v, want 3 × 30 of 31 full blocks + 2", got)
	}
	// A deep queue outweighs a partial hit.
	e[1].Metrics.Waiting = 30
	kv["b"] = 160
	if i := r.Pick(&Request{Prompt: prompt(500, 0)}, e); i == 1 {
		t.Errorf("picked the replica with 30 waiting for a 32%% hit")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{Policy: "fastest"},
		{Policy: RoundRobin, Scorers: DefaultScorers()},
		{Policy: EndpointPicker, Scorers: []Scorer{}},
		{Policy: EndpointPicker, Scorers: []Scorer{{"lora-affinity-scorer", 1}}},
		{Policy: EndpointPicker, Scorers: []Scorer{{PrecisePrefixScorer, 1}}},
		{Policy: EndpointPicker, Scorers: []Scorer{{QueueScorer, -1}}},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}

func TestParseScorers(t *testing.T) {
	got, err := ParseScorers("queue-scorer=2, kv-cache-utilization-scorer=2,precise-prefix-cache-scorer")
	if err != nil {
		t.Fatal(err)
	}
	if want := []Scorer{{QueueScorer, 2}, {KVCacheScorer, 2}, {PrecisePrefixScorer, 1}}; !slices.Equal(got, want) {
		t.Errorf("parsed %v, want %v", got, want)
	}
	if s := FormatScorers(DefaultScorers()); s != "queue-scorer=2,kv-cache-utilization-scorer=2,prefix-cache-scorer=3" {
		t.Errorf("formatted %q", s)
	}
	for _, bad := range []string{"", "queue-scorer=x", "queue-scorer=-1", "queue=2", "queue-scorer,queue-scorer=3"} {
		if _, err := ParseScorers(bad); err == nil || !strings.Contains(err.Error(), "parse scorers") {
			t.Errorf("ParseScorers(%q): %v", bad, err)
		}
	}
}

func FuzzParseScorers(f *testing.F) {
	for _, s := range []string{"queue-scorer=2,prefix-cache-scorer=3", "precise-prefix-cache-scorer", "=", ",,", "queue-scorer=1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ss, err := ParseScorers(s)
		if err != nil {
			return
		}
		back, err := ParseScorers(FormatScorers(ss))
		if err != nil || !slices.Equal(back, ss) {
			t.Errorf("%q → %v → %q → %v, %v", s, ss, FormatScorers(ss), back, err)
		}
	})
}
