package sim

import (
	"slices"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/profiles"
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

// LoRACost is what a step's adapters add: their weights read and their
// arithmetic (the shrink and expand GEMMs on every linear layer, for each
// token run through an adapter), and the copy of the adapters the GPU had
// to load first.
type LoRACost struct {
	Adapters, Loads int
	Compute, Load   time.Duration
	FLOPs, Bytes    float64 // per GPU
}

// loraParams is an adapter's parameters at rank r over every linear layer
// (q, k, v, o, gate, up and down, vLLM's usual targets): r·(in+out) each.
func loraParams(m *profiles.Model, r int) float64 {
	h, q, kv, in := float64(m.Hidden), float64(m.Heads*m.HeadDim), float64(m.KVHeads*m.HeadDim), float64(m.Intermediate)
	perLayer := (h + q) + 2*(h+kv) + (q + h) + 2*(h+in) + (in + h)
	return float64(r) * perLayer * float64(m.Layers)
}

// hostLink is the host-to-GPU copy rate the adapters load at: PCIe Gen5
// x16 on Hopper, Gen4 x16 before, at about 85% of the link's 64 or 32 GB/s.
func hostLink(hw *profiles.Hardware) float64 {
	if n := strings.ToLower(hw.Name); strings.HasPrefix(n, "h100") || strings.HasPrefix(n, "h200") {
		return 55e9
	}
	return 27e9
}

// step prices b's adapters and updates the slots.
func (l *loraState) step(cm *CostModel, b *engine.Batch) LoRACost {
	var c LoRACost
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
		return c
	}
	for _, id := range l.seen {
		if i := slices.Index(l.resident, id); i >= 0 {
			l.resident = append(slices.Delete(l.resident, i, i+1), id)
			continue
		}
		c.Loads++
		if len(l.resident) >= l.cfg.MaxLoRAs {
			l.resident = l.resident[1:]
		}
		l.resident = append(l.resident, id)
	}
	m, hw := &cm.Model, &cm.HW
	tp := float64(max(1, cm.TP))
	params := loraParams(m, l.cfg.Rank)
	perGPU := params * m.BytesPerParam / tp
	c.Adapters = len(l.seen)
	c.FLOPs = 2 * params * float64(tokens) / tp
	c.Bytes = float64(c.Adapters) * perGPU
	c.Compute = seconds(max(c.Bytes/hw.MemBandwidth, c.FLOPs/(hw.PeakFLOPs*hw.Calib.GEMMEfficiency)))
	c.Load = seconds(float64(c.Loads) * perGPU / hostLink(hw))
	return c
}
