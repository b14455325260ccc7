package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

func stories(t testing.TB) *model.Weights {
	t.Helper()
	f, err := gguf.Open(reftest.Path(t, "models", "stories260K", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func runEngine(t *testing.T, w *model.Weights, blocks int) *engine.Engine {
	t.Helper()
	x, err := New(w, Config{NumBlocks: blocks, BlockSize: 16, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{MaxNumSeqs: 32, MaxNumBatchedTokens: 256, MaxModelLen: 512, BlockSize: 16,
		NumBlocks: blocks, EnablePrefixCaching: true, MaxWaiting: 100, EOS: []int{2}}, x, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// generate is n greedy tokens of prompt.
func generate(t *testing.T, e *engine.Engine, id string, prompt []int, n int) []int {
	return generateWith(t, e, id, prompt, n, 0)
}

// generateWith is generate with min_tokens (past the whole output, a
// speculative engine's sequence never drafts).
func generateWith(t *testing.T, e *engine.Engine, id string, prompt []int, n, minTokens int) []int {
	return tokens(submitWith(t, e, id, prompt, n, minTokens))
}

// submitWith submits generateWith's request and returns its stream (nil,
// with the test failed, where the engine refuses it).
func submitWith(t *testing.T, e *engine.Engine, id string, prompt []int, n, minTokens int) *engine.Stream {
	p := sampling.Defaults()
	p.Temperature, p.MaxTokens, p.MinTokens, p.IgnoreEOS = 0, n, minTokens, true
	s, err := e.Submit(&engine.Request{ID: id, Prompt: prompt, Params: p})
	if err != nil {
		t.Error(err)
	}
	return s
}

// tokens reads a stream to its end.
func tokens(s *engine.Stream) []int {
	var out []int
	for s != nil {
		o, ok := s.Next(context.Background())
		if !ok {
			break
		}
		out = append(out, o.Tokens...)
	}
	return out
}

// readAll reads the streams concurrently, as their clients would.
func readAll(streams []*engine.Stream) [][]int {
	out := make([][]int, len(streams))
	var wg sync.WaitGroup
	for i, s := range streams {
		wg.Go(func() { out[i] = tokens(s) })
	}
	wg.Wait()
	return out
}

// TestGoldenStoryThroughTheEngine: the engine + CPU executor reproduce
// llama.cpp's greedy continuation of "<s> Once upon a time".
func TestGoldenStoryThroughTheEngine(t *testing.T) {
	e := runEngine(t, stories(t), 64)
	got := generate(t, e, "golden", []int{1, 403, 407, 261, 378}, 16)
	want := []int{432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337}
	if !slices.Equal(got, want) {
		t.Errorf("greedy ids %v, want %v", got, want)
	}
}

// TestConcurrentEqualsAlone: 32 concurrent greedy requests, batched
// together with chunked prefill and shared prefixes, each produce exactly
// what they produce alone.
func TestConcurrentEqualsAlone(t *testing.T) {
	w := stories(t)
	prompts := make([][]int, 32)
	for i := range prompts {
		prompts[i] = []int{1, 403, 407, 261, 378}
		for j := range i % 7 {
			prompts[i] = append(prompts[i], 3+((i*31+j*17)%500))
		}
	}
	alone := make([][]int, len(prompts))
	e := runEngine(t, w, 256)
	for i, p := range prompts {
		alone[i] = generate(t, e, fmt.Sprint("alone", i), p, 24)
	}
	e2 := runEngine(t, w, 256)
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Go(func() {
			if got := generate(t, e2, fmt.Sprint("batch", i), p, 24); !slices.Equal(got, alone[i]) {
				t.Errorf("request %d: batched %v, alone %v", i, got, alone[i])
			}
		})
	}
	wg.Wait()
}

// TestWorkEstimates: the MFU counters' inputs grow as they should: a token
// deeper in its context reads that much more KV, and a step reads every
// layer's weights once.
func TestWorkEstimates(t *testing.T) {
	w := stories(t)
	x, err := New(w, Config{NumBlocks: 4, BlockSize: 16, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	step := func(pos int) engine.StepResult {
		var r engine.StepResult
		b := &engine.Batch{Seqs: []engine.SeqBatch{{Tokens: []int{5}, Pos: pos, BlockTable: []int{0}}}, NumTokens: 1}
		if err := x.Execute(b, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	near, far := step(0), step(10)
	perToken := float64(w.KVBytesPerToken())
	if got := far.ReadBytes - near.ReadBytes; got != 10*perToken {
		t.Errorf("10 more context tokens read %v more bytes, want %v", got, 10*perToken)
	}
	if near.ReadBytes < float64(len(w.Output.Data)) || near.FLOPs <= 0 || near.WriteBytes != perToken {
		t.Errorf("estimates %+v", near)
	}
}

// TestApplyMask: exactly the tokens without a bit get -Inf, including
// those past the mask's end (logits the tokenizer has no token for).
func TestApplyMask(t *testing.T) {
	logits := make([]float32, 200)
	mask := []uint64{^uint64(0), 0, 1<<3 | 1<<63}
	applyMask(logits, mask)
	for i, l := range logits {
		allowed := i < 64 || i == 128+3 || i == 128+63
		if allowed != !math.IsInf(float64(l), -1) {
			t.Errorf("token %d: logit %v, allowed %v", i, l, allowed)
		}
	}
}

// TestEmbedWithoutPoolingIsRefusedAlone: a generative model (no pooling)
// refuses an embedding request at Submit, by name, and the generation
// beside it runs on: the request used to reach the executor, which failed
// the whole step, every sequence in it with an error.
func TestEmbedWithoutPoolingIsRefusedAlone(t *testing.T) {
	e := runEngine(t, stories(t), 64)
	gen := submitWith(t, e, "gen", []int{1, 403, 407, 263, 31, 500}, 40, 0)
	p := sampling.Defaults()
	p.MaxTokens = 1
	_, err := e.Submit(&engine.Request{ID: "emb", Prompt: []int{1, 403, 407}, Params: p, Embed: true})
	var pe *sampling.ParamError
	if !errors.As(err, &pe) || pe.Param != "model" || !strings.Contains(pe.Msg, "embeddings") {
		t.Errorf("embedding request to a model without pooling: %v, want a ParamError on model", err)
	}
	var out engine.Output
	n := 0
	for {
		o, ok := gen.Next(context.Background())
		if !ok {
			break
		}
		n += len(o.Tokens)
		out = o
	}
	if n != 40 || out.FinishReason != engine.FinishLength || out.Err != nil {
		t.Errorf("the generation beside it: %d tokens, finished %v (%v), want 40 and length", n, out.FinishReason, out.Err)
	}
}

// TestEmbeddingsPoolAcrossChunks: an embedding computed through the
// engine, its prompt split over chunks of prefill, equals one Forward of
// the whole prompt pooled by hand, for each pooling.
func TestEmbeddingsPoolAcrossChunks(t *testing.T) {
	prompt := make([]int, 150)
	for i := range prompt {
		prompt[i] = 3 + (i*37)%500
	}
	for _, pooling := range []model.Pooling{model.PoolMean, model.PoolCLS, model.PoolLast} {
		w := stories(t)
		w.Config.Pooling = pooling
		// By hand: every token's final hidden state in one pass.
		r := model.NewRunner(w, 16, 16, 1)
		table := make([]int, 16)
		for i := range table {
			table[i] = i
		}
		if err := r.Forward([]model.Seq{{Tokens: prompt, BlockTable: table, LogitsFrom: len(prompt), HiddenTo: len(prompt)}}); err != nil {
			t.Fatal(err)
		}
		H := w.Config.Hidden
		want := make([]float32, H)
		rows := map[model.Pooling][2]int{model.PoolMean: {0, len(prompt)}, model.PoolCLS: {0, 1}, model.PoolLast: {len(prompt) - 1, len(prompt)}}[pooling]
		for j := rows[0]; j < rows[1]; j++ {
			for d := range H {
				want[d] += r.Hidden[j*H+d]
			}
		}
		r.Close()
		normalize(want)

		x, err := New(w, Config{NumBlocks: 64, BlockSize: 16, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 48, MaxModelLen: 512, BlockSize: 16,
			NumBlocks: 64, EnablePrefixCaching: true, MaxWaiting: 100, EOS: []int{2}}, x, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { e.Run(ctx); close(done) }()
		p := sampling.Defaults()
		p.MaxTokens = 1
		g := e.NewGroup("emb", 1)
		for range 2 { // the second is a prefix-cache hit it must not use
			if err := g.Add(engine.Request{Prompt: prompt, Params: p, Embed: true}, nil); err != nil {
				t.Fatal(err)
			}
		}
		for {
			m, out, ok := g.Next(context.Background())
			if !ok {
				break
			}
			if !out.Finished {
				continue
			}
			if len(out.Embedding) != H {
				t.Fatalf("%v member %d: %d dimensions (%v)", pooling, m, len(out.Embedding), out.Err)
			}
			for d := range H {
				if math.Abs(float64(out.Embedding[d]-want[d])) > 1e-4 {
					t.Fatalf("%v member %d: dimension %d is %v, want %v", pooling, m, d, out.Embedding[d], want[d])
				}
			}
		}
		cancel()
		<-done
		x.Close()
	}
}
