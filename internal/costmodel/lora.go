package costmodel

import (
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// LoRACost is what a step's adapters add: their weights read and their
// arithmetic (the shrink and expand GEMMs on every linear layer, for each
// token run through an adapter), and the copy of the adapters the GPU had
// to load first.
type LoRACost struct {
	Adapters, Loads int
	Compute, Load   time.Duration
	FLOPs, Bytes    float64 // per GPU
}

// LoRA prices a step that runs tokens through adapters distinct adapters
// of rank rank, loads of which the GPU had to copy from host memory
// first (which adapters sit in the GPU's slots is the executor's).
func (cm *Model) LoRA(rank, adapters, loads, tokens int) LoRACost {
	c := LoRACost{Adapters: adapters, Loads: loads}
	if adapters == 0 {
		return c
	}
	m, hw := &cm.Model, &cm.HW
	tp := float64(max(1, cm.TP))
	params := loraParams(m, rank)
	perGPU := params * m.BytesPerParam / tp
	c.FLOPs = 2 * params * float64(tokens) / tp
	c.Bytes = float64(c.Adapters) * perGPU
	c.Compute = seconds(max(c.Bytes/hw.MemBandwidth, c.FLOPs/(hw.PeakFLOPs*hw.Calib.GEMMEfficiency)))
	c.Load = seconds(float64(c.Loads) * perGPU / hostLink(hw))
	return c
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
