package workload

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
)

// campaignExp16 is the BLIS campaign's inference-perf profile for exp 16
// as its values.yaml writes it (reference/calibration/README.md §A).
const campaignExp16 = `
load:
  type: constant
  stages:
  - {rate: 8.0, duration: 600}
  - {rate: 20.0, duration: 600}
api: {type: completion, streaming: true}
server: {type: vllm, model_name: meta-llama/Llama-3.1-8B-Instruct, base_url: http://0.0.0.0:8000, ignore_eos: true}
tokenizer: {pretrained_model_name_or_path: meta-llama/Llama-3.1-8B-Instruct}
data:
  type: shared_prefix
  shared_prefix:
    num_unique_system_prompts: 9
    num_users_per_system_prompt: 5
    system_prompt_len: 100
    question_len: 447
    output_len: 248
    enable_multi_turn_chat: true
report: {request_lifecycle: {summary: true, per_stage: true, per_request: true}}
storage: {local_storage: {path: /tmp/out}}
`

func parse(t *testing.T, y string) *InferencePerf {
	t.Helper()
	c, err := ParseInferencePerf(strings.NewReader(y))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseInferencePerfCampaign(t *testing.T) {
	c := parse(t, campaignExp16)
	sp := c.Data.SharedPrefix
	if *sp.NumGroups != 9 || *sp.NumPromptsPerGroup != 5 || sp.QuestionLen.Value != 447 || !sp.EnableMultiTurnChat {
		t.Errorf("shared_prefix = %d groups × %d, question %d, multi-turn %v; want 9 × 5, 447, true",
			*sp.NumGroups, *sp.NumPromptsPerGroup, sp.QuestionLen.Value, sp.EnableMultiTurnChat)
	}
	if c.Load.Type != "constant" || len(c.Load.Stages) != 2 || c.API.Type != "completion" {
		t.Errorf("load %s with %d stages, api %s", c.Load.Type, len(c.Load.Stages), c.API.Type)
	}
}

func TestParseInferencePerfRejects(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"unknown key":        {"load: {stages: [{rate: 1, duration: 1}], bogus: 1}", "bogus"},
		"alias conflict":     {"load: {stages: [{rate: 1, duration: 1}]}\ndata: {type: shared_prefix, shared_prefix: {num_groups: 2, num_unique_system_prompts: 3}}", "twice"},
		"no stages":          {"load: {type: constant}", "stages is empty"},
		"zero rate":          {"load: {stages: [{rate: 0, duration: 10}]}", "positive"},
		"trace load":         {"load: {type: trace, stages: [{rate: 1, duration: 1}]}", "constant, poisson"},
		"synthetic, no lens": {"load: {stages: [{rate: 1, duration: 1}]}\ndata: {type: synthetic}", "input_distribution"},
		"random, no lens":    {"load: {stages: [{rate: 1, duration: 1}]}\ndata: {type: random}", "input_distribution"},
		"chat multi-turn":    {"load: {stages: [{rate: 1, duration: 1}]}\napi: {type: chat}\ndata: {type: shared_prefix, shared_prefix: {enable_multi_turn_chat: true}}", "completion"},
		"bad distribution":   {"load: {stages: [{rate: 1, duration: 1}]}\ndata: {type: random, input_distribution: {min: 9, max: 3}, output_distribution: {}}", "min"},
		"infinite skew":      {"load: {stages: [{rate: 1, duration: 1}]}\ndata: {type: random, input_distribution: {type: skew_normal, skew: .inf}, output_distribution: {}}", "skew"},
		"negative count":     {"load: {stages: [{rate: 1, duration: 1}]}\ndata: {type: random, input_distribution: {total_count: -5}, output_distribution: {}}", "total_count"},
	} {
		_, err := ParseInferencePerf(strings.NewReader(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", name, err, tc.want)
		}
	}
}

// TestConstantOffsets: inference-perf's constant load sends exactly
// int(rate·duration) requests, the last at the stage's end, with
// exponential (not fixed) gaps.
func TestConstantOffsets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	offs := ConstantOffsets(int(20.0*600), 600, rng)
	if len(offs) != 12000 {
		t.Fatalf("%d offsets, want 12000", len(offs))
	}
	if last := offs[len(offs)-1]; (last - 600*time.Second).Abs() > time.Microsecond {
		t.Errorf("last offset %v, want 600s", last)
	}
	var gaps []float64
	prev := time.Duration(0)
	for _, o := range offs {
		if o < prev {
			t.Fatal("offsets go backwards")
		}
		gaps = append(gaps, (o - prev).Seconds())
		prev = o
	}
	if cv := std(gaps) / mean(gaps); cv < 0.9 || cv > 1.1 {
		t.Errorf("gap coefficient of variation %.2f, want about 1 (exponential)", cv)
	}
	if n := len(PoissonOffsets(7, 30, rng)); n != 210 {
		t.Errorf("poisson stage of 7/s × 30 s gave %d requests, want 210", n)
	}
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func std(x []float64) float64 {
	m, s := mean(x), 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return math.Sqrt(s / float64(len(x)))
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

// fixedPlan is a plan of the given stages over prompts "p0", "p1", ….
func fixedPlan(n int, stages ...[]time.Duration) *Plan {
	p := &Plan{Interval: 2 * time.Second}
	for i := range n {
		p.Prompts = append(p.Prompts, Sample{Prompt: "p" + string(rune('0'+i)), PromptLen: 1, OutputLen: 1})
	}
	for _, offs := range stages {
		p.Stages = append(p.Stages, Stage{Duration: offs[len(offs)-1], Offsets: offs})
	}
	return p
}

func secs(s ...float64) []time.Duration {
	var out []time.Duration
	for _, v := range s {
		out = append(out, time.Duration(v*float64(time.Second)))
	}
	return out
}

// TestScheduleStagesDrain: the next stage starts Interval after the
// previous stage's last completion, never while it still has requests out.
func TestScheduleStagesDrain(t *testing.T) {
	s := fixedPlan(2, secs(0, 1), secs(0, 0.5)).Start()
	a, next := s.Poll(0)
	if len(a) != 1 || next != time.Second {
		t.Fatalf("at 0: %d ready, next %v", len(a), next)
	}
	b, _ := s.Poll(time.Second)
	s.Finished(a[0], 3*time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	if r, next := s.Poll(3 * time.Second); len(r) != 0 || next >= 0 {
		t.Fatalf("stage 0 still has a request out, yet %d ready, next %v", len(r), next)
	}
	s.Finished(b[0], 10*time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	r, next := s.Poll(10 * time.Second)
	if len(r) != 0 || next != 12*time.Second {
		t.Fatalf("after the drain at 10s: %d ready, next %v; want the next stage at 12s", len(r), next)
	}
	r, _ = s.Poll(12 * time.Second)
	if len(r) != 1 || r[0].Stage != 1 || r[0].Due != 12*time.Second || r[0].Sample.Prompt != "p0" {
		t.Fatalf("stage 1 opened with %+v; want p0 again, due at 12s", r)
	}
	s.Finished(r[0], 13*time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	r, _ = s.Poll(13 * time.Second)
	s.Finished(r[0], 14*time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	if _, next := s.Poll(14 * time.Second); !s.Done() || next >= 0 {
		t.Error("the schedule is not done after every request finished")
	}
}

// TestScheduleSessions: a user's rounds go one at a time, each carrying
// the conversation so far (inference-perf's user session), in order.
func TestScheduleSessions(t *testing.T) {
	p := fixedPlan(2, secs(0, 0, 0, 0.1))
	p.Sessions = true
	s := p.Start()
	r, _ := s.Poll(0)
	if len(r) != 2 || r[0].User != 0 || r[1].User != 1 || r[0].Sample.Prompt != " p0" {
		t.Fatalf("round 0: %+v; want users 0 and 1, prompt \" p0\"", r)
	}
	if more, _ := s.Poll(time.Second); len(more) != 0 {
		t.Fatalf("user 0's second round went while its first was in flight: %+v", more)
	}
	s.Finished(r[0], 2*time.Second, Outcome{OK: true, Text: "answer", OutputTokens: 1})
	more, _ := s.Poll(2 * time.Second)
	if len(more) != 1 || more[0].User != 0 || more[0].Sample.Prompt != " p0 answer p0" || more[0].Due != 0 || more[0].Sample.PromptLen != 3 {
		t.Fatalf("user 0's second round: %+v; want \" p0 answer p0\", due at 0, 3 tokens", more)
	}
	s.Finished(r[1], 3*time.Second, Outcome{OK: false, Text: "", OutputTokens: 0})
	more, _ = s.Poll(3 * time.Second)
	if len(more) != 1 || more[0].Sample.Prompt != " p1" {
		t.Fatalf("after a failed round user 1 sent %+v; want its conversation unchanged (\" p1\")", more)
	}
}

// TestScheduleConcurrencyAndUntil: vLLM's --max-concurrency holds requests
// back (still due at their offsets), and --duration stops sending.
func TestScheduleConcurrencyAndUntil(t *testing.T) {
	p := fixedPlan(3, secs(0, 0, 0, 5))
	p.MaxConcurrency = 2
	p.Until = 4 * time.Second
	s := p.Start()
	r, _ := s.Poll(0)
	if len(r) != 2 {
		t.Fatalf("%d sent under a cap of 2", len(r))
	}
	s.Finished(r[0], time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	more, next := s.Poll(time.Second)
	if len(more) != 1 || more[0].Due != 0 || more[0].Index != 2 {
		t.Fatalf("after a slot freed: %+v", more)
	}
	if next != 5*time.Second {
		t.Errorf("next %v, want 5s", next)
	}
	s.Finished(r[1], 2*time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	s.Finished(more[0], 3*time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	if late, _ := s.Poll(5 * time.Second); len(late) != 0 || !s.Done() {
		t.Errorf("sent %d after --duration ended, done %v", len(late), s.Done())
	}
	idx := []int{r[0].Index, r[1].Index, more[0].Index}
	if !slices.Equal(idx, []int{0, 1, 2}) {
		t.Errorf("indices %v", idx)
	}
}

// TestReplayPlan: a detailed bench result replays its successful requests
// at their send offsets with their token counts.
func TestReplayPlan(t *testing.T) {
	trace := `{"input_lens":[30,12,40],"output_lens":[5,0,7],"start_times":[0.5,0.1,0.2],"errors":["","boom",""]}`
	p, err := ReplayPlan(context.Background(), strings.NewReader(trace), simTok{sim.NewVocab()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Prompts) != 2 || p.Prompts[0].PromptLen != 40 || p.Prompts[0].OutputLen != 7 || p.Prompts[1].PromptLen != 30 ||
		!slices.Equal(p.Stages[0].Offsets, secs(0.2, 0.5)) || !p.IgnoreEOS {
		t.Errorf("replay = %+v, offsets %v", p.Prompts, p.Stages[0].Offsets)
	}
	for _, bad := range []string{`{}`, `{"input_lens":[1],"output_lens":[]}`, `not json`, `{"input_lens":[3],"output_lens":[1],"start_times":[0],"errors":["x"]}`} {
		if _, err := ReplayPlan(context.Background(), strings.NewReader(bad), simTok{sim.NewVocab()}, 1); err == nil {
			t.Errorf("trace %s was accepted", bad)
		}
	}
}

// FuzzParseInferencePerf: any input is a configuration that checks out or
// an error, never a panic, and a checked one has stages that can run.
func FuzzParseInferencePerf(f *testing.F) {
	f.Add(campaignExp16)
	f.Add("load: {type: poisson, stages: [{rate: 2, duration: 3}]}\ndata: {type: random, input_distribution: {mean: 5, std_dev: 1}, output_distribution: {type: fixed, mean: 3}}")
	f.Add("load: {stages: []}")
	f.Fuzz(func(t *testing.T, y string) {
		c, err := ParseInferencePerf(strings.NewReader(y))
		if err != nil {
			return
		}
		for _, s := range c.Load.Stages {
			if !(s.Rate > 0 && s.Duration > 0) {
				t.Fatalf("accepted stage %+v", s)
			}
		}
		if sp := c.Data.SharedPrefix; sp != nil && (*sp.NumGroups < 1 || *sp.NumPromptsPerGroup < 1) {
			t.Fatalf("accepted shared_prefix %+v", sp)
		}
	})
}
