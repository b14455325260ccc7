package inferenceperf

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// simTok is the simulator's byte-level vocabulary behind a JSON wire, as
// bench meets a server's /tokenize and /detokenize.
type simTok struct{ v *sim.Vocab }

// wire is what a string looks like after a JSON round trip: invalid UTF-8
// becomes U+FFFD.
func wire(s string) string {
	b, _ := json.Marshal(s)
	var o string
	_ = json.Unmarshal(b, &o)
	return o
}
func (s simTok) ID() string                                        { return "sim" }
func (s simTok) Count(_ context.Context, t string) (int, error)    { return len(s.v.Encode(wire(t))), nil }
func (s simTok) Encode(_ context.Context, t string) ([]int, error) { return s.v.Encode(wire(t)), nil }
func (s simTok) Decode(_ context.Context, ids []int) (string, error) {
	return wire(s.v.Decode(ids)), nil
}
func (s simTok) VocabSize() int     { return s.v.Size() }
func (s simTok) SpecialTokens() int { return 0 }

func newPlan(t *testing.T, y string, o PlanOptions) *workload.Plan {
	t.Helper()
	p, err := NewPlan(context.Background(), parse(t, y), simTok{sim.NewVocab()}, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSharedPrefixSeed: data.shared_prefix.seed fixes the prompts whatever
// the run's seed; another seed gives other prompts.
func TestSharedPrefixSeed(t *testing.T) {
	prompts := func(seed string, run int64) string {
		y := "load: {stages: [{rate: 4, duration: 2}]}\ndata: {type: shared_prefix, shared_prefix: {num_groups: 2, num_prompts_per_group: 3, system_prompt_len: 20, question_len: 10" + seed + "}}"
		var b strings.Builder
		for _, s := range newPlan(t, y, PlanOptions{Seed: run}).Prompts {
			fmt.Fprintf(&b, "%q\n", s.Prompt)
		}
		return b.String()
	}
	if a, b := prompts(", seed: 7", 1), prompts(", seed: 7", 2); a != b {
		t.Errorf("shared_prefix.seed 7 gave other prompts under another run seed:\n%s\n%s", a, b)
	}
	if a, b := prompts(", seed: 7", 1), prompts(", seed: 8", 1); a == b {
		t.Error("shared_prefix.seed 7 and 8 gave the same prompts")
	}
	if a, b := prompts("", 1), prompts("", 2); a == b {
		t.Error("without shared_prefix.seed, two run seeds gave the same prompts")
	}
}

// TestDistributionsAsInferencePerf: each distribution type's draws stay in
// [min, max] with about the asked mean; fixed is int(mean), unclipped, as
// numpy's full does.
func TestDistributionsAsInferencePerf(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	dist := func(y string) *Distribution {
		var d Distribution
		c := parse(t, "load: {stages: [{rate: 1, duration: 1}]}\ndata: {type: random, input_distribution: "+y+", output_distribution: {}}")
		d = *c.Data.InputDistribution
		return &d
	}
	for _, tc := range []struct {
		y        string
		gen      bool // generate (random/synthetic) or sample (shared_prefix)
		min, max int
		mean     float64
	}{
		{"{min: 10, max: 100, mean: 50, std_dev: 10}", true, 10, 100, 50},
		{"{type: lognormal, min: 10, max: 4096, mean: 150, std_dev: 60}", true, 10, 4096, 150},
		{"{type: uniform, min: 10, max: 20}", true, 10, 20, 15},
		{"{type: uniform, min: 10, max: 20}", false, 10, 20, 15.5},
		{"{type: normal, min: 1, max: 1000, mean: 200, std_dev: 80}", false, 1, 1000, 200},
	} {
		d := dist(tc.y)
		var xs []int
		if tc.gen {
			xs = d.generate(20000, rng)
		} else {
			xs = d.sample(20000, rng)
		}
		s := 0.0
		for _, x := range xs {
			if x < tc.min || x > tc.max {
				t.Fatalf("%s: %d outside [%d, %d]", tc.y, x, tc.min, tc.max)
			}
			s += float64(x)
		}
		if m := s / float64(len(xs)); math.Abs(m-tc.mean)/tc.mean > 0.03 {
			t.Errorf("%s: mean %.1f, want about %v", tc.y, m, tc.mean)
		}
	}
	skew := &Distribution{Type: "skew_normal"}
	skew.Mean, skew.StdDev, skew.Skew, skew.Min, skew.Max = ptr(200.0), ptr(80.0), ptr(2.5), ptr(10), ptr(2000)
	xs := skew.sample(20000, rng)
	above := 0
	for _, x := range xs {
		if x > 200 {
			above++
		}
	}
	if above < 14000 { // a right skew of 2.5 puts about 4/5 above the location
		t.Errorf("skew_normal: %d of 20000 above the mean's location, want most", above)
	}
	fixed := dist("{type: fixed, mean: 2000.7, max: 100}")
	if got := fixed.generate(3, rng); got[0] != 2000 {
		t.Errorf("fixed %v, want int(mean) = 2000 unclipped", got)
	}
	if got := clipRound(12.5, 0, 100); got != 12 {
		t.Errorf("clipRound(12.5) = %d, want 12 (numpy rounds half to even)", got)
	}
}

func ptr[T any](v T) *T { return &v }

// TestRandomAndSyntheticLengths: random and synthetic prompts are the
// drawn lengths as the server counts them, enough for the largest stage;
// synthetic ones are slices of one corpus; a zero output length asks for
// inference-perf's default 30.
func TestRandomAndSyntheticLengths(t *testing.T) {
	for _, typ := range []string{"random", "synthetic"} {
		p := newPlan(t, `load: {stages: [{rate: 4, duration: 5}, {rate: 2, duration: 5}]}
data: {type: `+typ+`, input_distribution: {min: 10, max: 100, mean: 50, std_dev: 10}, output_distribution: {min: 0, max: 3, mean: 1, std_dev: 2}}`, PlanOptions{Seed: 3})
		if len(p.Prompts) != 21 {
			t.Errorf("%s: %d prompts, want 21 (the largest stage's 20, plus one, as inference-perf)", typ, len(p.Prompts))
		}
		zeros := 0
		for _, s := range p.Prompts {
			if s.PromptLen < 10 || s.PromptLen > 100 || len(s.PromptIDs) != s.PromptLen {
				t.Fatalf("%s: prompt of %d tokens (%d ids)", typ, s.PromptLen, len(s.PromptIDs))
			}
			if s.OutputLen == 30 {
				zeros++
			}
		}
		if zeros == 0 {
			t.Errorf("%s: no zero output length became 30", typ)
		}
		if typ == "synthetic" && !strings.Contains(defaultCorpus(), strings.TrimSpace(p.Prompts[0].Prompt)[:20]) {
			t.Errorf("synthetic prompt %q is not a slice of the corpus", p.Prompts[0].Prompt)
		}
	}
}

// TestShareGPTAsInferencePerf: the file's conversations in order, the first
// skipped until the file comes round again, filtered by the distributions'
// bounds; chat sends every turn; without data.path the hub file is fetched.
func TestShareGPTAsInferencePerf(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	var b strings.Builder
	b.WriteString("[")
	for i := range 5 {
		if i > 0 {
			b.WriteString(",")
		}
		words := strings.Repeat("word ", 3+i*10)
		fmt.Fprintf(&b, `{"conversations":[{"from":"human","value":"q%d %s"},"{\"from\":\"gpt\",\"value\":\"a%d\"}",{"from":"human","value":"more"}]}`, i, words, i)
	}
	b.WriteString(`,{"conversations":[{"from":"human","value":"alone"}]}]`)
	os.WriteFile(path, []byte(b.String()), 0o644)
	stages := "load: {stages: [{rate: 2, duration: 2}, {rate: 3, duration: 2}]}\n"
	p := newPlan(t, stages+"data: {type: shareGPT, path: "+path+"}", PlanOptions{})
	if len(p.Prompts) != 10 || !p.Continuous || !strings.HasPrefix(p.Prompts[0].Prompt, "q1 ") || !strings.HasPrefix(p.Prompts[4].Prompt, "q0 ") ||
		!strings.HasPrefix(p.Prompts[5].Prompt, "q1 ") {
		var got []string
		for _, s := range p.Prompts {
			got = append(got, s.Prompt[:2])
		}
		t.Errorf("prompts %v; want q1..q4, then q0..q4 again, for 10 requests over the stages", got)
	}
	long := newPlan(t, stages+"data: {type: shareGPT, path: "+path+", input_distribution: {min: 20, max: 1000}}", PlanOptions{})
	for _, s := range long.Prompts {
		if s.PromptLen < 20 {
			t.Errorf("a prompt of %d tokens passed input_distribution.min 20", s.PromptLen)
		}
	}
	chat := newPlan(t, stages+"api: {type: chat}\ndata: {type: shareGPT, path: "+path+"}", PlanOptions{})
	if m := chat.Prompts[0].Messages; len(m) != 3 || m[1].Role != "assistant" || m[1].Content != "a1" || chat.Prompts[0].OutputLen != 30 {
		t.Errorf("chat sample %+v; want all three turns and max_tokens 30", chat.Prompts[0])
	}
	var fetched string
	_, err := NewPlan(context.Background(), parse(t, stages+"data: {type: shareGPT}"), simTok{sim.NewVocab()},
		PlanOptions{Fetch: func(_ context.Context, ref string) (string, error) { fetched = ref; return path, nil }})
	if err != nil || fetched != ShareGPTHub {
		t.Errorf("fetched %q (%v), want %s", fetched, err, ShareGPTHub)
	}
	_, err = NewPlan(context.Background(), parse(t, stages+"data: {type: shareGPT}"), simTok{sim.NewVocab()}, PlanOptions{})
	if err == nil || !strings.Contains(err.Error(), "data.path") || !strings.Contains(err.Error(), "ShareGPT_V3_unfiltered_cleaned_split.json") {
		t.Errorf("offline: %v, want the file named and data.path", err)
	}
}

// TestSharedPrefixPlans: the campaign file read as inference-perf now reads
// it (9 groups of 5 users, exact lengths, sessions) and as e8e0aa99, which
// the published runs used, read it (the long names ignored: 10 × 10 single
// turns, question lengths drifting by re-tokenisation).
func TestSharedPrefixPlans(t *testing.T) {
	ctx := context.Background()
	tk := simTok{sim.NewVocab()}
	c := parse(t, campaignExp16)
	cur, err := NewPlan(ctx, c, tk, PlanOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewPlan(ctx, c, tk, PlanOptions{Compat: Legacy, Drift: [2]int{48, 26}}); err == nil || !strings.Contains(err.Error(), "drift") {
		t.Errorf("a reversed drift: %v, want an error naming it", err)
	}
	if len(cur.Prompts) != 45 || !cur.Sessions || cur.NumRequests() != 4800+12000 || cur.Interval != 2*time.Second {
		t.Errorf("current: %d prompts, sessions %v, %d requests, interval %v; want 45, true, 16800, 2s",
			len(cur.Prompts), cur.Sessions, cur.NumRequests(), cur.Interval)
	}
	prefixes := map[string]int{}
	for _, p := range cur.Prompts {
		if p.PromptLen != 547 {
			t.Fatalf("current prompt of %d tokens, want 547", p.PromptLen)
		}
		prefixes[tk.v.Decode(p.PromptIDs[:100])]++
	}
	if len(prefixes) != 9 {
		t.Errorf("%d distinct system prompts, want 9", len(prefixes))
	}
	old, err := NewPlan(ctx, c, tk, PlanOptions{Compat: Legacy, Seed: 1, Drift: [2]int{26, 48}})
	if err != nil {
		t.Fatal(err)
	}
	if len(old.Prompts) != 100 || old.Sessions {
		t.Errorf("legacy: %d prompts, sessions %v; want 100 single turns", len(old.Prompts), old.Sessions)
	}
	for _, p := range old.Prompts {
		if extra := p.PromptLen - 547; extra < 26 || extra > 49 { // the " " joining them is one more
			t.Fatalf("legacy prompt of %d tokens, want 547 + 26…48 + the joining space", p.PromptLen)
		}
	}
}

const azure2023 = `TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:51.2224670,879,55
`

// TestTraceReplayStages: every stage replays the trace's times from its
// start (to the hundredth of a second, as inference-perf reads them), as
// many requests as the data's trace has.
func TestTraceReplayStages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(path, []byte(azure2023), 0o644)
	tr := "{file: " + path + ", format: AzurePublicDataset}"
	p := newPlan(t, "load: {type: trace_replay, trace: "+tr+", stages: [{rate: 1, duration: 30}, {rate: 1, duration: 30}]}\ndata: {type: random, trace: "+tr+"}", PlanOptions{})
	want := []time.Duration{0, 4310 * time.Millisecond, 4540 * time.Millisecond}
	for _, st := range p.Stages {
		if fmt.Sprint(st.Offsets) != fmt.Sprint(want) || st.Duration != want[2] || st.Rate != 1 {
			t.Errorf("stage %v over %v at %v/s, want %v over the trace's span (4.54s) at the configured 1/s", st.Offsets, st.Duration, st.Rate, want)
		}
	}
	if len(p.Prompts) != 3 || p.Prompts[2].PromptLen != 879 || p.Prompts[2].OutputLen != 55 {
		t.Errorf("prompts from the data trace: %+v", p.Prompts)
	}
	_, err := NewPlan(context.Background(), parse(t, "load: {type: trace_replay, trace: "+tr+", stages: [{rate: 1, duration: 30}]}\ndata: {type: mock}"),
		simTok{sim.NewVocab()}, PlanOptions{})
	if err == nil || !strings.Contains(err.Error(), "has 3") {
		t.Errorf("30 requests from a 3-request trace: %v", err)
	}
}

// TestSharedPrefixSessionNames: shared_prefix's multi-turn sessions are
// named as inference-perf names them, by a prompt's place before the
// shuffle (group × num_prompts_per_group + prompt: the prompts of a name's
// group share its system prompt), and count their rounds from 1.
func TestSharedPrefixSessionNames(t *testing.T) {
	p := newPlan(t, `
load: {type: constant, stages: [{rate: 20, duration: 1}]}
api: {type: completion}
data: {type: shared_prefix, shared_prefix: {num_groups: 2, num_prompts_per_group: 3, system_prompt_len: 30, question_len: 5, output_len: 4, enable_multi_turn_chat: true}}
`, PlanOptions{Seed: 3})
	_, reqs := run(p.Start(), func(workload.Request) time.Duration { return time.Second }, func(workload.Request) bool { return false })
	if len(reqs) != 20 {
		t.Fatalf("%d requests, want 20", len(reqs))
	}
	group := map[int]string{} // group → its system prompt
	rounds := map[string]int{}
	for _, r := range reqs {
		var orig int
		if _, err := fmt.Sscanf(r.SessionID, "user_session_%d", &orig); err != nil || orig < 0 || orig >= 6 {
			t.Fatalf("request %d of user %d: session %q", r.Index, r.User, r.SessionID)
		}
		rounds[r.SessionID]++
		if r.Round != rounds[r.SessionID] {
			t.Errorf("%s: round %d, want %d", r.SessionID, r.Round, rounds[r.SessionID])
		}
		sys := p.Prompts[r.User].Prompt[:20]
		if g, ok := group[orig/3]; ok && g != sys {
			t.Errorf("%s (user %d) does not share its group's system prompt", r.SessionID, r.User)
		}
		group[orig/3] = sys
	}
	if len(rounds) != 6 || group[0] == group[1] {
		t.Errorf("%d sessions named, groups %v: want 6 sessions in 2 groups", len(rounds), group)
	}
}
