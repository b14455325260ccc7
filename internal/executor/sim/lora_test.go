package sim

import (
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// TestLoRACost: a step's adapters cost their weights' read and their
// arithmetic; an adapter not in one of the --max-loras slots is first
// copied from the host, once, and the least recently used gives way.
func TestLoRACost(t *testing.T) {
	e, err := New(Config{Hardware: "h100", Model: "llama-3.1-8b", LoRA: &LoRA{MaxLoRAs: 2, Rank: 16}})
	if err != nil {
		t.Fatal(err)
	}
	batch := func(loras ...int) *engine.Batch {
		b := &engine.Batch{}
		for i, l := range loras {
			b.Seqs = append(b.Seqs, engine.SeqBatch{Seq: i, Tokens: []int{1}, Pos: 100, NumPrompt: 50, LoRA: l})
			b.NumTokens++
		}
		return b
	}
	var loads []time.Duration
	for _, b := range []*engine.Batch{batch(0, 0), batch(1, 0), batch(1, 2), batch(1, 2), batch(3)} {
		c := e.lora.step(&e.cost, b)
		loads = append(loads, c.Load)
		if n := len(e.lora.seen); c.Adapters != n || (n > 0) != (c.Compute > 0) {
			t.Errorf("step of adapters %v: %+v", e.lora.seen, c)
		}
	}
	if loads[0] != 0 || loads[1] <= 0 || loads[2] != loads[1] || loads[3] != 0 || loads[4] != loads[1] {
		t.Errorf("loads %v; want none for the base model, one each for adapters 1, 2 and 3, none once resident", loads)
	}
	if r := e.lora.resident; len(r) != 2 || r[0] != 2 || r[1] != 3 {
		t.Errorf("resident %v, want [2 3] (1 evicted as least recently used)", r)
	}
}
