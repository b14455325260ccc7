// Command external uses glassbox as a program outside its module does:
// through the public package only, from a module that requires it
// (external_test.go writes the go.mod and runs it). It opens the model
// named by its argument and checks, printing one line per check:
//
//   - greedy Generate gives stories260K's golden story;
//   - 32 prompts in one Generate equal their one-by-one results;
//   - leaving a Stream's loop and cancelling a Generate's context abort
//     what is running, and vLLM's metrics, on the program's own registry,
//     show nothing running and no KV block used afterwards.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox"
)

const golden = ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily's mom said,"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: external MODEL.gguf")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, model string) error {
	reg := prometheus.NewRegistry()
	llm, err := glassbox.Open(ctx, glassbox.Options{Model: model, Threads: 2, Registerer: reg})
	if err != nil {
		return err
	}
	defer llm.Close()
	for _, check := range []struct {
		name string
		run  func(context.Context, *glassbox.LLM, *prometheus.Registry) error
	}{
		{"golden story", goldenStory},
		{"32 batched equal one by one", batchedEqualsAlone},
		{"cancel frees the KV cache", cancelFrees},
	} {
		if err := check.run(ctx, llm, reg); err != nil {
			return fmt.Errorf("%s: %w", check.name, err)
		}
		fmt.Println("ok:", check.name)
	}
	return nil
}

func goldenStory(ctx context.Context, llm *glassbox.LLM, _ *prometheus.Registry) error {
	outs, err := llm.Generate(ctx, []string{"Once upon a time"}, glassbox.SamplingParams{Temperature: 0, MaxTokens: 65})
	if err != nil {
		return err
	}
	c := outs[0].Completions[0]
	if c.Text != golden || len(c.TokenIDs) != 65 || c.FinishReason != glassbox.FinishLength {
		return fmt.Errorf("%d tokens (%s): %q\nwant 65 (length): %q", len(c.TokenIDs), c.FinishReason, c.Text, golden)
	}
	return nil
}

func batchedEqualsAlone(ctx context.Context, llm *glassbox.LLM, _ *prometheus.Registry) error {
	prompts := make([]string, 32)
	for i := range prompts {
		prompts[i] = fmt.Sprintf("Once upon a time, %d little %s", i%5, []string{"cats", "dogs", "birds", "girls"}[i%4])
	}
	params := glassbox.SamplingParams{MaxTokens: 40}
	batched, err := llm.Generate(ctx, prompts, params)
	if err != nil {
		return err
	}
	for i, p := range prompts {
		alone, err := llm.Generate(ctx, []string{p}, params)
		if err != nil {
			return err
		}
		a, b := alone[0].Completions[0], batched[i].Completions[0]
		if a.Text != b.Text || !slices.Equal(a.TokenIDs, b.TokenIDs) || a.FinishReason != b.FinishReason {
			return fmt.Errorf("prompt %d: batched %q (%s), alone %q (%s)", i, b.Text, b.FinishReason, a.Text, a.FinishReason)
		}
	}
	return nil
}

// cancelFrees leaves a stream of four completions after its first delta,
// and cancels a Generate of eight prompts from inside a stream's loop;
// then every request has ended and no KV block is in use.
func cancelFrees(ctx context.Context, llm *glassbox.LLM, reg *prometheus.Registry) error {
	long := glassbox.SamplingParams{MaxTokens: 120, IgnoreEOS: true}
	long.N = 4
	for _, err := range llm.Stream(ctx, "Once upon a time", long) {
		if err != nil {
			return err
		}
		break
	}
	if err := idle(reg, "after leaving the stream"); err != nil {
		return err
	}

	long.N = 1
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prompts := make([]string, 8)
	for i := range prompts {
		prompts[i] = fmt.Sprintf("The %d dogs", i)
	}
	done := make(chan error, 1)
	go func() {
		_, err := llm.Generate(cctx, prompts, long)
		done <- err
	}()
	for _, err := range llm.Stream(cctx, "One day", long) {
		if err != nil {
			if errors.Is(err, context.Canceled) {
				break
			}
			return err
		}
		cancel()
	}
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("cancelled Generate: %v, want context.Canceled", err)
	}
	if err := idle(reg, "after cancelling Generate"); err != nil {
		return err
	}
	m, err := gather(reg)
	if err != nil {
		return err
	}
	fmt.Printf("   requests: %v aborted, %v finished by length\n", m[`vllm:request_success_total{finished_reason="abort"}`], m[`vllm:request_success_total{finished_reason="length"}`])
	return nil
}

// idle checks vLLM's gauges: nothing running or waiting, no KV in use.
func idle(reg *prometheus.Registry, when string) error {
	m, err := gather(reg)
	if err != nil {
		return err
	}
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"} {
		v, ok := m[name]
		if !ok || v != 0 {
			return fmt.Errorf("%s: %s = %v (exported: %v), want 0", when, name, v, ok)
		}
	}
	return nil
}

// gather reads the registry's counters and gauges as name{label="v"},
// leaving out the engine and model_name labels.
func gather(reg *prometheus.Registry) (map[string]float64, error) {
	families, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	m := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			key := f.GetName()
			for _, lp := range s.GetLabel() {
				if lp.GetName() != "engine" && lp.GetName() != "model_name" {
					key += fmt.Sprintf("{%s=%q}", lp.GetName(), lp.GetValue())
				}
			}
			switch {
			case s.Counter != nil:
				m[key] = s.GetCounter().GetValue()
			case s.Gauge != nil:
				m[key] = s.GetGauge().GetValue()
			}
		}
	}
	return m, nil
}
