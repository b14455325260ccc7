package workload

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
)

func newPlan(t *testing.T, y string, o PlanOptions) *Plan {
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
	dist := func(y string) *IPDistribution {
		var d IPDistribution
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
	skew := &IPDistribution{Type: "skew_normal"}
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

const azure2023 = `TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:51.2224670,879,55
`

const azure2024 = `TIMESTAMP,ContextTokens,GeneratedTokens
2024-05-10 00:00:00.009930+00:00,2162,5
2024-05-10 00:00:01+00:00,76,15
2024-05-10 00:00:01.5Z,70,1
`

const burst = `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45,GPT-4,1087,0,1087,Conversation log
47,GPT-4,417,24,441,API log
`

// TestTraces: the Azure traces of both years and BurstGPT's, timed from
// their first request.
func TestTraces(t *testing.T) {
	for _, tc := range []struct {
		name, text, format string
		at                 []time.Duration
		in                 []int
	}{
		{"azure 2023", azure2023, TraceAzure, []time.Duration{0, 4314579000, 4541877000}, []int{374, 396, 879}},
		{"azure 2024", azure2024, TraceAzure, []time.Duration{0, 990070000, 1490070000}, []int{2162, 76, 70}},
		{"burstgpt", burst, TraceBurstGPT, []time.Duration{0, 42 * time.Second}, []int{472, 417}},
		// Rows out of order are sent in time order, from the earliest.
		{"azure, unsorted", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:50.9951690,396,109\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:51.2224670,879,55\n",
			TraceAzure, []time.Duration{0, 4314579000, 4541877000}, []int{374, 396, 879}},
	} {
		path := filepath.Join(t.TempDir(), "t.csv")
		os.WriteFile(path, []byte(tc.text), 0o644)
		if f, ok := TraceFormatOf(path); !ok || f != tc.format {
			t.Errorf("%s: detected %q", tc.name, f)
		}
		got, err := ReadTrace(path, tc.format)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != len(tc.at) {
			t.Fatalf("%s: %d entries", tc.name, len(got))
		}
		for i := range got {
			if got[i].At != tc.at[i] || got[i].Input != tc.in[i] {
				t.Errorf("%s[%d]: %v %d, want %v %d", tc.name, i, got[i].At, got[i].Input, tc.at[i], tc.in[i])
			}
		}
	}
	for _, bad := range []string{"TIMESTAMP,a,b\n2023-13-45 99:00:00,1,2\n", "TIMESTAMP,a,b\n2023-11-16 18:15:46,x,2\n", "2023-11-16 18:15:46,1\n"} {
		if _, err := parseAzureTrace(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("%q: %v, want an error naming the line", bad, err)
		}
	}
}

func FuzzParseTraces(f *testing.F) {
	f.Add(azure2023)
	f.Add(burst)
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range must(parseAzureTrace(strings.NewReader(s))) {
			if e.Input < 0 || e.Output < 0 {
				t.Fatal("negative count")
			}
		}
		_, _ = parseBurstGPT(strings.NewReader(s))
	})
}

func must[T any](v T, _ error) T { return v }

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

// run drives a schedule with every request taking took, and returns when
// each was sent.
func run(s *Schedule, took func(Request) time.Duration, fail func(Request) bool) (sent []time.Duration, reqs []Request) {
	type flight struct {
		r   Request
		end time.Duration
	}
	var live []flight
	now := time.Duration(0)
	for range 1_000_000 {
		ready, next := s.Poll(now)
		for _, r := range ready {
			sent, reqs = append(sent, now), append(reqs, r)
			live = append(live, flight{r, now + took(r)})
		}
		for _, c := range s.Cancelled() {
			for i := range live {
				if live[i].r.Index == c.Index {
					live[i].end = now
				}
			}
		}
		if s.Done() {
			return sent, reqs
		}
		soon := next
		for _, f := range live {
			if soon < 0 || f.end < soon {
				soon = f.end
			}
		}
		now = max(now, soon)
		kept := live[:0]
		for _, f := range live {
			if f.end <= now {
				s.Finished(f.r, now, Outcome{OK: !fail(f.r), OutputTokens: 1, ErrorType: "TimeoutError"})
			} else {
				kept = append(kept, f)
			}
		}
		live = kept
	}
	panic("schedule did not finish")
}

// TestSweepFindsSaturation: a server that drains 10 requests a second
// (one at a time, 100 ms each) is found saturated at about 10 req/s, and
// the stages run from 1 to it.
func TestSweepFindsSaturation(t *testing.T) {
	// A server that answers one request at a time, in 100 ms.
	p := newPlan(t, "load: {sweep: {type: linear, num_requests: 60, num_stages: 4, stage_duration: 2, timeout: 30}}\ndata: {type: mock}", PlanOptions{})
	s := p.Start()
	free := time.Duration(0)
	var sent []time.Duration
	_, reqs := run(s, func(r Request) time.Duration {
		now := r.Due
		if len(sent) > 0 {
			now = max(now, sent[len(sent)-1])
		}
		sent = append(sent, now)
		free = max(free, now) + 100*time.Millisecond
		return free - now
	}, func(Request) bool { return false })
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	if sat := s.Saturation(); sat < 8 || sat > 12 {
		t.Errorf("saturation %.2f, want about 10", sat)
	}
	st := s.Stages()
	if len(st) != 4 || st[0].Rate != 1 || math.Abs(st[3].Rate-s.Saturation()) > 0.01 {
		t.Errorf("stages %v", st)
	}
	probe := 0
	for _, r := range reqs {
		if r.Stage < 0 {
			probe++
		}
	}
	if probe != 60 {
		t.Errorf("%d probe requests, want 60", probe)
	}
	g := (&Sweep{NumStages: 3, Geometric: true}).rates(9)
	if g[0] != 1 || g[2] != 9 || g[1] <= 5 {
		t.Errorf("geometric rates %v, want 1 … 9, closer to 9", g)
	}
}

// TestSweepTimeoutAndTooFewSamples: a probe past its timeout is cut off
// (its requests abandoned), and one that saw no draining is an error.
func TestSweepTimeoutAndTooFewSamples(t *testing.T) {
	p := newPlan(t, "load: {sweep: {type: linear, num_requests: 20, timeout: 3}}\ndata: {type: mock}", PlanOptions{})
	s := p.Start()
	run(s, func(Request) time.Duration { return time.Hour }, func(Request) bool { return false })
	if s.Err() == nil || !strings.Contains(s.Err().Error(), "num_requests") {
		t.Errorf("a probe nothing drained in: %v", s.Err())
	}
}

// TestRequestTimeoutAndBreaker: load.request_timeout abandons slow
// requests; a named circuit breaker stops the run when they trip it.
func TestRequestTimeoutAndBreaker(t *testing.T) {
	p := newPlan(t, `load: {stages: [{rate: 10, duration: 2}, {rate: 10, duration: 2}], request_timeout: 0.5, circuit_breakers: [slow]}
data: {type: mock}
circuit_breakers:
- name: slow
  metrics: {matches: ["error.error_type == 'TimeoutError'"]}
  triggers: [{type: consecutive, threshold: 3}]`, PlanOptions{})
	s := p.Start()
	_, reqs := run(s, func(r Request) time.Duration {
		if r.Index >= 5 {
			return time.Hour
		}
		return 10 * time.Millisecond
	}, func(r Request) bool { return r.Index >= 5 })
	if len(reqs) >= 40 || len(reqs) < 8 {
		t.Errorf("%d requests sent; the breaker should have stopped the run a few timeouts after the fifth", len(reqs))
	}
}

// TestConcurrentStagesAndLoRA: a concurrent stage caps its own requests in
// flight; the LoRA split sends each request to an adapter by its weight.
func TestConcurrentStagesAndLoRA(t *testing.T) {
	p := newPlan(t, `load: {type: concurrent, stages: [{num_requests: 40, concurrency_level: 4}], lora_traffic_split: [{name: a, split: 0.75}, {name: b, split: 0.25}]}
data: {type: mock}`, PlanOptions{})
	s := p.Start()
	inFlight, most := 0, 0
	counts := map[string]int{}
	now := time.Duration(0)
	var live []Request
	for !s.Done() {
		ready, _ := s.Poll(now)
		for _, r := range ready {
			counts[r.Model]++
			live = append(live, r)
		}
		inFlight = len(live)
		most = max(most, inFlight)
		now += time.Second
		if len(live) > 0 {
			s.Finished(live[0], now, Outcome{OK: true})
			live = live[1:]
		}
	}
	if most != 4 {
		t.Errorf("at most %d in flight, want the concurrency level 4", most)
	}
	if counts["a"] < 22 || counts["b"] < 4 || counts["a"]+counts["b"] != 40 {
		t.Errorf("adapters %v, want about 30 a and 10 b", counts)
	}
}

// TestClientCap: num_workers × worker_max_concurrency caps the requests in
// flight, in current mode.
func TestClientCap(t *testing.T) {
	if p := newPlan(t, "load: {stages: [{rate: 1, duration: 1}], num_workers: 2, worker_max_concurrency: 10}", PlanOptions{}); p.MaxConcurrency != 20 {
		t.Errorf("cap %d, want 20", p.MaxConcurrency)
	}
	if p := newPlan(t, "load: {stages: [{rate: 1, duration: 1}]}", PlanOptions{Workers: 4}); p.MaxConcurrency != 400 {
		t.Errorf("default cap %d, want 4 workers × 100", p.MaxConcurrency)
	}
	if p := newPlan(t, "load: {stages: [{rate: 1, duration: 1}], num_workers: 2}", PlanOptions{NoClientCap: true}); p.MaxConcurrency != 0 {
		t.Errorf("no client cap: %d", p.MaxConcurrency)
	}
}
