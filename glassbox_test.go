package glassbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// golden is stories260K's greedy continuation of "Once upon a time", 65
// tokens (cmd/glassbox/serve_cpu_test.go checks it through the API).
const golden = ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily's mom said,"

func storiesPath(t *testing.T) string {
	t.Helper()
	return reftest.Path(t, "models", "stories260K", "stories260K.gguf")
}

func open(t *testing.T, opts Options) *LLM {
	t.Helper()
	l, err := Open(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func texts(outs []Output) [][]string {
	var all [][]string
	for _, o := range outs {
		var ts []string
		for _, c := range o.Completions {
			ts = append(ts, c.Text)
		}
		all = append(all, ts)
	}
	return all
}

// stepHook is an engine observer that hears of every step.
type stepHook func(*engine.StepEvent)

func (h stepHook) ObserveStep(s *engine.StepEvent)     { h(s) }
func (stepHook) ObserveFinished(*engine.FinishedEvent) {}

// TestGenerateGoldenStory: greedy decoding of stories260K gives the
// model's documented story, with its 65 tokens and a consistent timeline.
func TestGenerateGoldenStory(t *testing.T) {
	l := open(t, Options{Model: storiesPath(t), Threads: 2})
	outs, err := l.Generate(t.Context(), []string{"Once upon a time"}, SamplingParams{MaxTokens: 65})
	if err != nil {
		t.Fatal(err)
	}
	o := outs[0]
	c := o.Completions[0]
	if c.Text != golden || len(c.TokenIDs) != 65 || c.FinishReason != FinishLength || len(o.PromptTokenIDs) != 5 {
		t.Fatalf("%d prompt tokens, %d tokens, %s, text %q\nwant 5, 65, length, %q", len(o.PromptTokenIDs), len(c.TokenIDs), c.FinishReason, c.Text, golden)
	}
	tm := c.Timing
	if tm.Arrival.IsZero() || tm.FirstScheduled.Before(tm.Arrival) || tm.FirstToken.Before(tm.FirstScheduled) ||
		tm.LastToken.Before(tm.FirstToken) || tm.Finished.Before(tm.LastToken) {
		t.Errorf("timeline out of order: %+v", tm)
	}
}

// TestGenerateBatchedEqualsAlone: 32 prompts in one call give exactly what
// each gives alone, in prompt order.
func TestGenerateBatchedEqualsAlone(t *testing.T) {
	l := open(t, Options{Model: storiesPath(t), Threads: 2})
	prompts := make([]string, 32)
	for i := range prompts {
		prompts[i] = fmt.Sprintf("Once upon a time, %d little %s", i%5, []string{"cats", "dogs", "birds", "girls"}[i%4])
	}
	params := SamplingParams{MaxTokens: 40}
	var alone []Output
	for _, p := range prompts {
		outs, err := l.Generate(t.Context(), []string{p}, params)
		if err != nil {
			t.Fatal(err)
		}
		alone = append(alone, outs...)
	}
	batched, err := l.Generate(t.Context(), prompts, params)
	if err != nil {
		t.Fatal(err)
	}
	ignoreTiming := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Timing" || p.Last().String() == ".CachedTokens" }, cmp.Ignore())
	if d := cmp.Diff(alone, batched, ignoreTiming); d != "" {
		t.Errorf("batched outputs differ from one-by-one ones (-alone +batched):\n%s", d)
	}
}

// TestGenerateCancelAbortsAndFreesKV: cancelling the context while every
// prompt is decoding aborts them all, and their KV blocks are free by the
// time Generate returns: in the engine's stats and in vLLM's metrics.
func TestGenerateCancelAbortsAndFreesKV(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once sync.Once
	reg := prometheus.NewRegistry()
	l := open(t, Options{Sim: &SimOptions{}, Registerer: reg, observers: []engine.Observer{stepHook(func(s *engine.StepEvent) {
		if s.NumDecodeSeqs == 4 {
			once.Do(cancel) // every prompt holds KV blocks now
		}
	})}})
	_, err := l.Generate(ctx, []string{"a", "b c", "d e f", "g h i j"}, SamplingParams{MaxTokens: 20000, IgnoreEOS: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Generate after cancel: %v, want context.Canceled", err)
	}
	if st := l.rep.Engine.Stats(); st.KVUsage != 0 || st.Running != 0 || st.Waiting != 0 || st.KVFree != st.KVBlocks {
		t.Errorf("after the abort: %+v, want nothing running and every block free", st)
	}
	m := gather(t, reg)
	want := map[string]float64{
		`vllm:request_success_total{finished_reason="abort"}`: 4,
		`vllm:kv_cache_usage_perc`:                            0,
		`vllm:num_requests_running`:                           0,
		`vllm:num_requests_waiting`:                           0,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
}

// TestStreamBreakAbortsAndFreesKV: leaving a stream's loop aborts the
// completions still running, before the loop statement returns.
func TestStreamBreakAbortsAndFreesKV(t *testing.T) {
	reg := prometheus.NewRegistry()
	l := open(t, Options{Sim: &SimOptions{}, Registerer: reg})
	n := 0
	for c, err := range l.Stream(t.Context(), "Once upon a time", SamplingParams{N: 3, MaxTokens: 20000, IgnoreEOS: true}) {
		if err != nil {
			t.Fatal(err)
		}
		if c.FinishReason != "" {
			t.Fatalf("completion %d finished (%s) before the break", c.Index, c.FinishReason)
		}
		n++
		break
	}
	if n != 1 {
		t.Fatalf("%d deltas before the break", n)
	}
	if st := l.rep.Engine.Stats(); st.KVUsage != 0 || st.Running != 0 || st.Waiting != 0 {
		t.Errorf("after the break: %+v, want nothing running and no block used", st)
	}
	if got := gather(t, reg)[`vllm:request_success_total{finished_reason="abort"}`]; got != 3 {
		t.Errorf("aborted requests %v, want 3", got)
	}
}

// TestStreamEqualsGenerate: a stream's deltas, joined per completion, are
// Generate's completions, seeded sampling included, and stop strings end
// both at the same place.
func TestStreamEqualsGenerate(t *testing.T) {
	l := open(t, Options{Sim: &SimOptions{}})
	for _, params := range []SamplingParams{
		{N: 3, Temperature: 0.9, TopP: 0.9, Seed: new(int64(11)), MaxTokens: 30},
		{MaxTokens: 12, Stop: []string{" silence"}},
	} {
		outs, err := l.Generate(t.Context(), []string{"Once upon a time"}, params)
		if err != nil {
			t.Fatal(err)
		}
		want := outs[0].Completions
		got := make([]Completion, len(want))
		for c, err := range l.Stream(t.Context(), "Once upon a time", params) {
			if err != nil {
				t.Fatal(err)
			}
			g := &got[c.Index]
			g.Index = c.Index
			g.Text += c.Text
			g.TokenIDs = append(g.TokenIDs, c.TokenIDs...)
			g.FinishReason = c.FinishReason
		}
		if d := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Timing" }, cmp.Ignore())); d != "" {
			t.Errorf("%+v: stream differs from Generate (-generate +stream):\n%s", params, d)
		}
	}
}

// TestStopStrings: a stop string ends the completion with "stop", the
// text ending before it unless IncludeStopStrInOutput.
func TestStopStrings(t *testing.T) {
	l := open(t, Options{Sim: &SimOptions{}})
	full, err := l.Generate(t.Context(), []string{"Once upon a time"}, SamplingParams{MaxTokens: 12})
	if err != nil {
		t.Fatal(err)
	}
	text := full[0].Completions[0].Text
	i := strings.Index(text, " silence")
	if i < 0 {
		t.Fatalf("the sim's greedy text %q has no %q to stop at", text, " silence")
	}
	for _, include := range []bool{false, true} {
		outs, err := l.Generate(t.Context(), []string{"Once upon a time"}, SamplingParams{MaxTokens: 12, Stop: []string{" silence"}, IncludeStopStrInOutput: include})
		if err != nil {
			t.Fatal(err)
		}
		want := text[:i]
		if include {
			want = text[:i+len(" silence")]
		}
		if c := outs[0].Completions[0]; c.Text != want || c.FinishReason != FinishStop {
			t.Errorf("include %v: %q (%s), want %q (stop)", include, c.Text, c.FinishReason, want)
		}
	}
}

// TestInvalidCallsSubmitNothing: bad parameters and prompts fail with an
// error naming the field, before the engine sees anything.
func TestInvalidCallsSubmitNothing(t *testing.T) {
	l := open(t, Options{Sim: &SimOptions{}, MaxModelLen: 64})
	long := strings.Repeat("word ", 100)
	for _, tc := range []struct {
		name    string
		prompts []string
		params  SamplingParams
		want    string
		is      error
	}{
		{"top_p", []string{"x"}, SamplingParams{TopP: 1.5}, "SamplingParams.TopP: top_p must be in (0, 1], got 1.5", nil},
		{"temperature", []string{"x"}, SamplingParams{Temperature: -1}, "SamplingParams.Temperature", nil},
		{"top_k", []string{"x"}, SamplingParams{TopK: -2}, "SamplingParams.TopK", nil},
		{"n", []string{"x"}, SamplingParams{N: -1}, "SamplingParams.N must be between 1 and 128", nil},
		{"huge n", []string{"x"}, SamplingParams{N: math.MaxInt}, "SamplingParams.N must be between 1 and 128", nil},
		{"max_tokens", []string{"x"}, SamplingParams{MaxTokens: -1}, "SamplingParams.MaxTokens", nil},
		{"min_tokens", []string{"x"}, SamplingParams{MaxTokens: 4, MinTokens: 5}, "SamplingParams.MinTokens", nil},
		{"repetition_penalty", []string{"x"}, SamplingParams{RepetitionPenalty: 3}, "SamplingParams.RepetitionPenalty", nil},
		{"stop_token_ids", []string{"x"}, SamplingParams{StopTokenIDs: []int{-1}}, "SamplingParams.StopTokenIDs", nil},
		{"empty prompt", []string{"x", ""}, SamplingParams{}, "generate: prompt 1: the prompt is empty", nil},
		{"too long", []string{"x", long}, SamplingParams{}, "generate: prompt 1: ", ErrPromptTooLong},
		{"no room for max_tokens", []string{"x"}, SamplingParams{MaxTokens: 64}, "SamplingParams.MaxTokens=64 exceed the context of 64 tokens", ErrPromptTooLong},
		{"max_tokens that wraps", []string{"x"}, SamplingParams{MaxTokens: math.MaxInt}, "exceed the context of 64 tokens", ErrPromptTooLong},
	} {
		_, err := l.Generate(t.Context(), tc.prompts, tc.params)
		if err == nil || !strings.Contains(err.Error(), tc.want) || tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %v, want %q (%v)", tc.name, err, tc.want, tc.is)
		}
	}
	for _, tc := range []struct {
		name string
		conv [][]Message
		want string
	}{
		{"no messages", [][]Message{{}}, "chat: conversation 0: the conversation has no messages"},
		{"bad role", [][]Message{{{Role: "user", Content: "hi"}}, {{Role: "robot", Content: "hi"}}}, `chat: conversation 1: message 0: role must be`},
	} {
		if _, err := l.Chat(t.Context(), tc.conv, SamplingParams{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, err := range l.Stream(t.Context(), long, SamplingParams{}) {
		if !errors.Is(err, ErrPromptTooLong) {
			t.Errorf("stream of a long prompt: %v, want ErrPromptTooLong", err)
		}
	}
	if st := l.rep.Engine.Stats(); st.Steps != 0 {
		t.Errorf("the engine ran %d steps for invalid calls", st.Steps)
	}
	if outs, err := l.Generate(t.Context(), nil, SamplingParams{}); err != nil || len(outs) != 0 {
		t.Errorf("no prompts: %v, %v; want no outputs and no error", outs, err)
	}
}

// TestOpenErrors: what cannot be opened says why.
func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"nothing", Options{}, "Options.Model is empty"},
		{"both", Options{Model: "m.gguf", Sim: &SimOptions{}}, "Options.Model and Options.Sim are both set"},
		{"missing file", Options{Model: filepath.Join(t.TempDir(), "none.gguf")}, "none.gguf"},
		{"bad hub reference", Options{Model: "hf://just-owner"}, "want hf://OWNER/REPO/FILE"},
		{"unknown GPU", Options{Sim: &SimOptions{Hardware: "tpu"}}, `unknown profile`},
		{"negative seqs", Options{Sim: &SimOptions{}, MaxNumSeqs: -1}, "max-num-seqs must be at least 1"},
	} {
		l, err := Open(t.Context(), tc.opts)
		if err == nil {
			l.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestOpenHubReferenceFromCache: an hf:// model already in DownloadDir is
// used without the network, and served under the name it was opened by.
func TestOpenHubReferenceFromCache(t *testing.T) {
	data, err := os.ReadFile(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dest := filepath.Join(dir, "karpathy", "tinyllamas", "stories260K.gguf")
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dest, data, 0o644); err != nil {
		t.Fatal(err)
	}
	const ref = "hf://karpathy/tinyllamas/stories260K.gguf"
	l := open(t, Options{Model: ref, DownloadDir: dir, HFEndpoint: "http://127.0.0.1:1", Threads: 1})
	outs, err := l.Generate(t.Context(), []string{"Once upon a time"}, SamplingParams{MaxTokens: 65})
	if err != nil {
		t.Fatal(err)
	}
	if got := outs[0].Completions[0].Text; got != golden {
		t.Errorf("text %q, want %q", got, golden)
	}
	if got := l.rep.Names; !cmp.Equal(got, []string{ref}) {
		t.Errorf("served names %q, want [%q]", got, ref)
	}
}

// TestCloseEndsCalls: Close cancels a running call with ErrClosed and
// waits for it; afterwards every call fails with ErrClosed.
func TestCloseEndsCalls(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	l, err := Open(t.Context(), Options{Sim: &SimOptions{}, observers: []engine.Observer{stepHook(func(*engine.StepEvent) {
		once.Do(func() { close(started) })
	})}})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := l.Generate(context.Background(), []string{"a", "b"}, SamplingParams{MaxTokens: 100000, IgnoreEOS: true})
		errc <- err
	}()
	<-started
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("running Generate at Close: %v, want ErrClosed", err)
	}
	if _, err := l.Generate(t.Context(), []string{"a"}, SamplingParams{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Generate after Close: %v", err)
	}
	if _, err := l.Chat(t.Context(), [][]Message{{{Role: "user", Content: "a"}}}, SamplingParams{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Chat after Close: %v", err)
	}
	for _, err := range l.Stream(t.Context(), "a", SamplingParams{}) {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Stream after Close: %v", err)
		}
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestGenerateWaitsForRoom: more prompts than the engine's queue holds are
// all served, in order, as the oldest make room.
func TestGenerateWaitsForRoom(t *testing.T) {
	params := SamplingParams{MaxTokens: 6}
	prompts := make([]string, 40)
	for i := range prompts {
		prompts[i] = fmt.Sprintf("prompt number %d", i)
	}
	roomy := open(t, Options{Sim: &SimOptions{}})
	want, err := roomy.Generate(t.Context(), prompts, params)
	if err != nil {
		t.Fatal(err)
	}
	tight := open(t, Options{Sim: &SimOptions{}, maxQueued: 2})
	got, err := tight.Generate(t.Context(), prompts, params)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(texts(want), texts(got)); d != "" {
		t.Errorf("with a queue of 2 (-roomy +tight):\n%s", d)
	}
}

// gather reads the counters and gauges of reg, keyed as name{label="v"}
// without the engine and model_name labels every vLLM series has.
func gather(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			var labels []string
			for _, lp := range s.GetLabel() {
				if lp.GetName() != "engine" && lp.GetName() != "model_name" {
					labels = append(labels, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
				}
			}
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case s.Counter != nil:
				m[key] = s.GetCounter().GetValue()
			case s.Gauge != nil:
				m[key] = s.GetGauge().GetValue()
			}
		}
	}
	return m
}

// TestGenerateWaitsForOtherCallers: Generate waits for room in a full
// queue even when the requests filling it are other callers' (it has none
// of its own to collect first); only Stream reports ErrOverloaded.
func TestGenerateWaitsForOtherCallers(t *testing.T) {
	l := open(t, Options{Sim: &SimOptions{TimeScale: 0.05}, maxQueued: 2})
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			prompts := []string{fmt.Sprintf("caller %d, one", i), fmt.Sprintf("caller %d, two", i), fmt.Sprintf("caller %d, three", i)}
			outs, err := l.Generate(t.Context(), prompts, SamplingParams{MaxTokens: 8})
			if err == nil && len(outs) != 3 {
				err = fmt.Errorf("%d outputs", len(outs))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
}
