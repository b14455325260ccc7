package sim

import (
	"slices"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/engine"
)

// LoRA is the simulated GPU's adapter set-up, vLLM's --max-loras and
// --max-lora-rank: MaxLoRAs adapters fit in the GPU's LoRA slots; one not
// among them is copied from host memory when a step first needs it, the
// least recently used one giving up its slot.
type LoRA struct {
	MaxLoRAs int
	Rank     int // default 16, vLLM's
}

// loraState is the executor's slots, most recently used last.
type loraState struct {
	cfg      LoRA
	resident []int
	seen     []int // scratch: the step's adapters
}

// step updates the slots for b's adapters and prices them.
func (l *loraState) step(cm *costmodel.Model, b *engine.Batch) costmodel.LoRACost {
	l.seen = l.seen[:0]
	tokens := 0
	for i := range b.Seqs {
		s := &b.Seqs[i]
		if s.LoRA == 0 {
			continue
		}
		tokens += len(s.Tokens)
		if !slices.Contains(l.seen, s.LoRA) {
			l.seen = append(l.seen, s.LoRA)
		}
	}
	if len(l.seen) == 0 {
		return costmodel.LoRACost{}
	}
	loads := 0
	for _, id := range l.seen {
		if i := slices.Index(l.resident, id); i >= 0 {
			l.resident = append(slices.Delete(l.resident, i, i+1), id)
			continue
		}
		loads++
		if len(l.resident) >= l.cfg.MaxLoRAs {
			l.resident = l.resident[1:]
		}
		l.resident = append(l.resident, id)
	}
	return cm.LoRA(l.cfg.Rank, len(l.seen), loads, tokens)
}
