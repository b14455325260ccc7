package sim

import (
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// decodeStep is a steady-state decode step of n sequences, each with a
// 600-token history and nucleus sampling with a repetition penalty, so that
// every code path of Execute runs.
func decodeStep(tb testing.TB, e *Executor, n int) *engine.Batch {
	tb.Helper()
	p := sampling.Defaults()
	p.Temperature, p.TopP, p.RepetitionPenalty, p.Logprobs = 0.8, 0.95, 1.1, 2
	b := &engine.Batch{}
	for i := range n {
		hist := e.Vocab().Encode("Summarise the following report in plain words.")
		np := len(hist)
		for len(hist) < 600 {
			hist = append(hist, 300+(len(hist)*31+i)%4000) // words and pieces
		}
		b.Seqs = append(b.Seqs, engine.SeqBatch{
			Seq: i, Tokens: hist[len(hist)-1:], Pos: len(hist) - 1, Sample: true,
			History: hist, NumPrompt: np, Params: &p, RNG: sampling.NewRNG(int64(i)),
		})
		b.NumTokens++
	}
	return b
}

func BenchmarkExecuteDecode256(b *testing.B) {
	e := newExec(b, Config{})
	batch := decodeStep(b, e, 256)
	var r engine.StepResult
	if err := e.Execute(batch, &r); err != nil { // sizes the buffers
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Execute(batch, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStepCost256(b *testing.B) {
	e := newExec(b, Config{})
	batch := decodeStep(b, e, 256)
	b.ReportAllocs()
	for b.Loop() {
		e.StepCost(batch)
	}
}
