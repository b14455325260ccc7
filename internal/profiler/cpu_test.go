package profiler

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/cpu"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// TestCPUProfileHasItsPhases: a profile of the CPU executor running a
// (random) model shows each step's forward pass inside its execute slice:
// every layer with its matmuls, RoPE, attention and MLP, the LM head and
// sampling, nested as Perfetto reads them.
func TestCPUProfileHasItsPhases(t *testing.T) {
	shape, _ := model.LookupShape("tiny")
	var buf bytes.Buffer
	if err := model.WriteRandom(&buf, model.RandomSpec{Shape: shape, Type: gguf.Q8_0, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	x, err := cpu.New(w, cpu.Config{NumBlocks: 32, BlockSize: 16, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	dir := t.TempDir()
	p, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 32, MaxModelLen: 128, BlockSize: 16, NumBlocks: 32, MaxWaiting: 10,
		EOS: []int{-1}, Profiling: p.Recording}
	eng, err := engine.New(cfg, x, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { eng.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	var streams sync.WaitGroup
	for i := range 3 {
		params := sampling.Defaults()
		params.MaxTokens = 6
		s, err := eng.Submit(&engine.Request{ID: fmt.Sprint("r", i), Prompt: []int{3 + i, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		streams.Go(func() {
			for {
				if _, ok := s.Next(context.Background()); !ok {
					return
				}
			}
		})
	}
	streams.Wait()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	tf := readTrace(t, dir)
	checkNesting(t, tf.TraceEvents)
	steps := int(tf.OtherData["steps"].(float64))
	count := map[string]int{}
	for _, e := range tf.TraceEvents {
		if e.Cat == "kernel" {
			count[e.Name]++
		}
	}
	perLayer := []string{model.PhaseAttnNorm, model.PhaseQKV, model.PhaseRoPE, model.PhaseAttention, model.PhaseOProj,
		model.PhaseFFNNorm, model.PhaseMLP, model.PhaseGateUp, model.PhaseSiLUMul, model.PhaseDown}
	for _, name := range perLayer {
		if count[name] != steps*shape.Layers {
			t.Errorf("%d %q slices, want one a layer a step (%d × %d)", count[name], name, steps, shape.Layers)
		}
	}
	for _, name := range []string{model.PhaseEmbed, "layer 0", "layer 1", model.PhaseLMHead, "sample"} {
		if count[name] != steps {
			t.Errorf("%d %q slices, want one a step (%d)", count[name], name, steps)
		}
	}
}
