package sim

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/google/go-cmp/cmp"
)

func newExec(t testing.TB, cfg Config) *Executor {
	t.Helper()
	if cfg.Hardware == "" {
		cfg.Hardware, cfg.Model = "h200", "llama-3.1-8b"
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// decodeBatch is n sequences each decoding one token after ctx tokens.
func decodeBatch(n, ctx int) *engine.Batch {
	b := &engine.Batch{}
	for i := range n {
		b.Seqs = append(b.Seqs, engine.SeqBatch{Seq: i, Tokens: []int{1}, Pos: ctx, NumPrompt: ctx / 2, Sample: true})
		b.NumTokens++
	}
	return b
}

// prefillBatch is one sequence prefilling tokens prompt tokens from pos.
func prefillBatch(tokens, pos int) *engine.Batch {
	return &engine.Batch{
		Seqs:      []engine.SeqBatch{{Tokens: make([]int, tokens), Pos: pos, NumPrompt: pos + tokens, Sample: true}},
		NumTokens: tokens,
	}
}

// generate decodes from prompt one token per step, as the engine would,
// until EOS or n tokens; EOS is not included.
func generate(t testing.TB, e *Executor, prompt string, p sampling.Params, rng *rand.Rand, n int) []int {
	t.Helper()
	hist := e.Vocab().Encode(prompt)
	np := len(hist)
	var r engine.StepResult
	for range n {
		b := &engine.Batch{Seqs: []engine.SeqBatch{{
			Tokens: hist[len(hist)-1:], Pos: len(hist) - 1, Sample: true,
			History: hist, NumPrompt: np, Params: &p, RNG: rng,
		}}, NumTokens: 1}
		if err := e.Execute(b, &r); err != nil {
			t.Fatal(err)
		}
		if r.Samples[0].Token == e.Vocab().EOS() {
			break
		}
		hist = append(hist, r.Samples[0].Token)
	}
	return hist[np:]
}

func params(temp float64) sampling.Params {
	p := sampling.Defaults()
	p.Temperature = temp
	return p
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Hardware: "b200", Model: "llama-3.1-8b"}, "h200"},
		{Config{Hardware: "h200", Model: "llama-4"}, "qwen2.5-7b"},
		{Config{Hardware: "h200", Model: "qwen2.5-0.5b", TensorParallel: 4}, "--tensor-parallel-size"},
		{Config{Hardware: "h200", Model: "llama-3.1-8b", TensorParallel: -1}, "tensor parallel"},
		{Config{Hardware: "h200", Model: "llama-3.1-8b", TimeScale: -1}, "time scale"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error mentioning %q", tc.cfg, err, tc.want)
		}
	}
}

func TestInfo(t *testing.T) {
	e := newExec(t, Config{Hardware: "h100", Model: "llama-3.1-70b", TensorParallel: 4})
	want := Info{
		Executor: "sim", Hardware: "h100", Model: "llama-3.1-70b", TensorParallel: 4,
		PeakFLOPs: 989e12, MemBandwidth: 3.35e12, WeightBytes: 2 * 70_553_706_496,
		KVBytesPerToken: 2 * 80 * 2 * 128 * 2, // K and V, 80 layers, 8/4 KV heads, bf16
		MaxModelLen:     131072,
	}
	if diff := cmp.Diff(want, e.Info()); diff != "" {
		t.Errorf("Info (-want +got):\n%s", diff)
	}
	blocks, err := e.KVCacheBlocks(0.9, 0, 16)
	if err != nil || blocks < 1 {
		t.Errorf("KVCacheBlocks = %d, %v", blocks, err)
	}
	if n, err := e.KVCacheBlocks(0.9, 1000, 16); err != nil || n != 0 {
		t.Errorf("1000 bytes of KV cache: %d blocks, %v; want 0 (the engine config refuses it)", n, err)
	}
}

func TestSeededSamplingIsDeterministic(t *testing.T) {
	const prompt = "Write a short story about a lighthouse."
	run := func(seed int64) []int {
		return generate(t, newExec(t, Config{}), prompt, params(1), sampling.NewRNG(seed), 80)
	}
	a, b, c := run(7), run(7), run(8)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed and prompt differ (-first +second):\n%s", diff)
	}
	if slices.Equal(a, c) {
		t.Error("seeds 7 and 8 gave the same completion")
	}
}

func TestGreedyIsDeterministic(t *testing.T) {
	e := newExec(t, Config{})
	a := generate(t, e, "The capital of France is", params(0), sampling.NewRNG(1), 100)
	b := generate(t, e, "The capital of France is", params(0), sampling.NewRNG(2), 100)
	c := generate(t, e, "My favourite colour is", params(0), sampling.NewRNG(1), 100)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("greedy depends on the seed (-seed1 +seed2):\n%s", diff)
	}
	if slices.Equal(a, c) {
		t.Error("greedy gave the same completion for different prompts")
	}
	k1 := params(1)
	k1.TopK = 1
	if d := generate(t, e, "The capital of France is", k1, sampling.NewRNG(3), 100); !slices.Equal(a, d) {
		t.Error("top_k=1 differs from greedy")
	}
}

// TestCompletionsReadLikeText checks the shape of sampled text: sentences
// that start with a capital and end with a period, made mostly of words,
// with "a" and "an" before the right initials, never empty and ending with
// EOS after a few hundred tokens.
func TestCompletionsReadLikeText(t *testing.T) {
	badArticle := regexp.MustCompile(`\b([Aa] [aeiou]|[Aa]n [^aeiou])`)
	e := newExec(t, Config{})
	v := e.Vocab()
	var lengths []int
	for seed := range int64(60) {
		out := generate(t, e, "Tell me about the sea.", params(1), sampling.NewRNG(seed), 4000)
		lengths = append(lengths, len(out))
		words := 0
		for _, id := range out {
			if v.tokWord[id] >= 0 {
				words++
			}
		}
		if len(out) > 0 && float64(words) < 0.8*float64(len(out)) {
			t.Errorf("seed %d: %d of %d tokens are words: %q", seed, words, len(out), v.Decode(out))
		}
		text := v.Decode(out)
		if m := badArticle.FindString(text); m != "" {
			t.Errorf("seed %d: %q in %q", seed, m, text)
		}
		for _, sentence := range strings.Split(text, ". ") {
			sentence = strings.TrimLeft(sentence, "\n ")
			if sentence != "" && !strings.ContainsAny(sentence[:1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
				t.Errorf("seed %d: sentence %q does not start with a capital", seed, sentence)
			}
		}
	}
	slices.Sort(lengths)
	if median := lengths[len(lengths)/2]; median < 100 || median > 1000 || lengths[0] == 0 || lengths[len(lengths)-1] >= 4000 {
		t.Errorf("completion lengths %v: want a median of a few hundred, all ending in EOS", lengths)
	}
}

func TestLogprobsAreVocabularyIDs(t *testing.T) {
	e := newExec(t, Config{})
	p := params(0)
	p.Logprobs = 5
	hist := e.Vocab().Encode("Once upon a time")
	b := &engine.Batch{Seqs: []engine.SeqBatch{
		{Tokens: hist, Pos: 0, Sample: false, History: hist, NumPrompt: len(hist), Params: &p},
		{Tokens: hist, Pos: 0, Sample: true, History: hist, NumPrompt: len(hist), Params: &p},
	}}
	var r engine.StepResult
	if err := e.Execute(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Samples) != 2 {
		t.Fatalf("%d samples for 2 sequences", len(r.Samples))
	}
	got := r.Samples[1]
	if len(got.Top) != 5 || got.Top[0].Token != got.Token || got.Top[0].Logprob != got.Logprob || got.Logprob > 0 {
		t.Fatalf("greedy sample %+v: want 5 alternatives led by the chosen token", got)
	}
	for i, tl := range got.Top {
		if tl.Token < 0 || tl.Token >= e.Vocab().Size() || (i > 0 && tl.Logprob > got.Top[i-1].Logprob) {
			t.Errorf("top %d = %+v", i, tl)
		}
	}
	c := e.StepCost(b)
	if r.FLOPs != c.FLOPs || r.ReadBytes != c.ReadBytes || r.WriteBytes != c.WriteBytes || c.FLOPs <= 0 {
		t.Errorf("step result work %v/%v/%v, cost %+v", r.FLOPs, r.ReadBytes, r.WriteBytes, c)
	}
}

func TestRepetitionPenaltyChangesGreedy(t *testing.T) {
	e := newExec(t, Config{})
	plain := generate(t, e, "The river", params(0), nil, 200)
	p := params(0)
	p.RepetitionPenalty = 2
	penalised := generate(t, e, "The river", p, nil, 200)
	if slices.Equal(plain, penalised) {
		t.Error("repetition_penalty=2 left greedy output unchanged")
	}
}

func TestEqualRNGsGiveEqualCompletions(t *testing.T) {
	e := newExec(t, Config{})
	a := generate(t, e, "Hello", params(1), sampling.NewRNG(99), 50)
	b := generate(t, e, "Hello", params(1), sampling.NewRNG(99), 50)
	if len(a) == 0 || !slices.Equal(a, b) {
		t.Errorf("completions from equal RNGs: %v vs %v", a, b)
	}
}

func TestExecuteRejectsMissingParams(t *testing.T) {
	e := newExec(t, Config{})
	b := &engine.Batch{Seqs: []engine.SeqBatch{{Tokens: []int{1}, Sample: true}}}
	if err := e.Execute(b, &engine.StepResult{}); err == nil {
		t.Error("a sequence without params was sampled")
	}
}

// sleepClock is the wall clock with a Sleep that reports each wait.
type sleepClock struct{ sleep func(time.Duration) }

func (sleepClock) Now() time.Time          { return time.Now() }
func (c sleepClock) Sleep(d time.Duration) { c.sleep(d) }

func TestTimeScaleZeroDoesNotSleep(t *testing.T) {
	var slept []time.Duration
	e := newExec(t, Config{Clock: sleepClock{func(d time.Duration) { slept = append(slept, d) }}})
	generate(t, e, "Hi", params(1), sampling.NewRNG(1), 20)
	if len(slept) != 0 {
		t.Errorf("slept %v at time scale 0", slept)
	}
}

// TestStepsTakeSimulatedTime runs steps in a synctest bubble, where the
// clock moves only by sleeping, with a Sleep that always oversleeps: the
// steps must take their scaled cost in total, the overshoot counted once.
func TestStepsTakeSimulatedTime(t *testing.T) {
	const overshoot = 300 * time.Microsecond
	for _, scale := range []float64{1, 0.25} {
		synctest.Test(t, func(t *testing.T) {
			e := newExec(t, Config{TimeScale: scale, Clock: sleepClock{func(d time.Duration) { time.Sleep(d + overshoot) }}})
			p := params(1)
			var r engine.StepResult
			var want time.Duration
			start := time.Now()
			for n := 1; n <= 64; n *= 2 {
				b := decodeBatch(n, 500)
				for i := range b.Seqs {
					b.Seqs[i].Params = &p
					b.Seqs[i].RNG = sampling.NewRNG(int64(i))
				}
				want += time.Duration(float64(e.StepCost(b).Duration) * scale)
				if err := e.Execute(b, &r); err != nil {
					t.Fatal(err)
				}
			}
			if got := time.Since(start); got != want+overshoot {
				t.Errorf("scale %v: 7 steps took %v, want %v + one overshoot %v", scale, got, want, overshoot)
			}
			// After an idle second the next step is charged from now.
			time.Sleep(time.Second)
			b := decodeBatch(1, 10)
			b.Seqs[0].Params = &p
			start = time.Now()
			if err := e.Execute(b, &r); err != nil {
				t.Fatal(err)
			}
			if got, want := time.Since(start), time.Duration(float64(e.StepCost(b).Duration)*scale)+overshoot; got != want {
				t.Errorf("scale %v: step after idle took %v, want %v", scale, got, want)
			}
		})
	}
}

// TestBannedMasksEOS: while a sequence is short of min_tokens the engine
// bans its EOS, and EOS must never be sampled; without it, EOS comes.
func TestBannedMasksEOS(t *testing.T) {
	e := newExec(t, Config{})
	for _, ban := range []bool{false, true} {
		eos := 0
		for seed := range 20 {
			hist := e.Vocab().Encode("The end.")
			np := len(hist)
			p := params(1)
			rng := sampling.NewRNG(int64(seed))
			var banned []int
			if ban {
				banned = []int{e.Vocab().EOS()}
			}
			var r engine.StepResult
			for range 300 {
				b := &engine.Batch{Seqs: []engine.SeqBatch{{Tokens: hist[len(hist)-1:], Pos: len(hist) - 1, Sample: true,
					Banned: banned, History: hist, NumPrompt: np, Params: &p, RNG: rng}}, NumTokens: 1}
				if err := e.Execute(b, &r); err != nil {
					t.Fatal(err)
				}
				if r.Samples[0].Token == e.Vocab().EOS() {
					eos++
					break
				}
				hist = append(hist, r.Samples[0].Token)
			}
		}
		if ban && eos > 0 {
			t.Errorf("EOS sampled %d times while banned", eos)
		}
		if !ban && eos == 0 {
			t.Error("no EOS in 20 completions of 300 tokens unbanned: the test proves nothing")
		}
	}
}

// TestAsyncSchedulingHidesHostTime: with --async-scheduling the host's
// work for the next step overlaps the GPU's for this one, so only the part
// of it longer than the GPU's step remains for the engine to wait out.
func TestAsyncSchedulingHidesHostTime(t *testing.T) {
	for _, tc := range []struct {
		host  time.Duration
		async bool
	}{{2 * time.Millisecond, false}, {2 * time.Millisecond, true}, {200 * time.Millisecond, false}, {200 * time.Millisecond, true}} {
		e := newExec(t, Config{HostOverhead: tc.host, AsyncScheduling: tc.async, TimeScale: 1, Clock: &fakeClock{}})
		b := decodeStep(t, e, 64)
		c := e.StepCost(b)
		var r engine.StepResult
		if err := e.Execute(b, &r); err != nil {
			t.Fatal(err)
		}
		want := c.Host + tc.host
		if tc.async {
			want = max(want-c.Duration, 0)
		}
		if r.HostTime != want {
			t.Errorf("host %v, async %v: HostTime %v, want %v (GPU step %v)", tc.host, tc.async, r.HostTime, want, c.Duration)
		}
		if tc.async && tc.host == 2*time.Millisecond && r.HostTime != 0 {
			t.Errorf("a host share shorter than the GPU's step (%v) should hide entirely, left %v", c.Duration, r.HostTime)
		}
	}
}

// fakeClock is virtual time: Sleep moves it on at once.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time        { return c.now }
func (c *fakeClock) Sleep(d time.Duration) { c.now = c.now.Add(d) }
