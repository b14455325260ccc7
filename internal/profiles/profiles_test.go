package profiles

import (
	"math"
	"strings"
	"testing"
)

func TestLookupHardware(t *testing.T) {
	for _, name := range []string{"h200", "H100", "a100-80g", "l40s"} {
		hw, err := LookupHardware(name)
		if err != nil {
			t.Fatalf("LookupHardware(%q): %v", name, err)
		}
		if !strings.EqualFold(hw.Name, name) {
			t.Errorf("LookupHardware(%q).Name = %q", name, hw.Name)
		}
	}
	_, err := LookupHardware("tpu-v5")
	if err == nil {
		t.Fatal("LookupHardware(tpu-v5) succeeded")
	}
	for _, want := range append([]string{"tpu-v5"}, HardwareNames()...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestLookupModel(t *testing.T) {
	for _, name := range append(ModelNames(), "meta-llama/Llama-3.1-8B-Instruct", "qwen/qwen3-14b") {
		if _, err := LookupModel(name); err != nil {
			t.Errorf("LookupModel(%q): %v", name, err)
		}
	}
	_, err := LookupModel("gpt-5")
	if err == nil {
		t.Fatal("LookupModel(gpt-5) succeeded")
	}
	for _, want := range []string{"gpt-5", "llama-3.1-8b", "qwen2.5-0.5b"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestModelShapes checks each profile against its own architecture: the
// parameter count from the model card must match the count implied by the
// layer shapes, which catches a mistyped config value.
func TestModelShapes(t *testing.T) {
	qkvBias := map[string]bool{"qwen2.5-7b": true, "qwen2.5-0.5b": true}
	qkNorm := map[string]bool{"qwen3-14b": true, "qwen3-32b": true} // RMSNorm of each head's q and k
	wide := map[string]bool{"qwen3-32b": true}                      // heads × head dim above the hidden size
	for _, m := range modelProfiles() {
		t.Run(m.Name, func(t *testing.T) {
			if m.Heads*m.HeadDim != m.Hidden && !wide[m.Name] {
				t.Errorf("heads %d × head dim %d != hidden %d", m.Heads, m.HeadDim, m.Hidden)
			}
			if m.Heads%m.KVHeads != 0 {
				t.Errorf("heads %d not a multiple of KV heads %d", m.Heads, m.KVHeads)
			}
			h, q, kv := float64(m.Hidden), float64(m.Heads*m.HeadDim), float64(m.KVHeads*m.HeadDim)
			attn := 2*h*q + 2*h*kv
			if qkvBias[m.Name] {
				attn += q + 2*kv
			}
			if qkNorm[m.Name] {
				attn += 2 * float64(m.HeadDim)
			}
			mlp := 3 * h * float64(m.Intermediate)
			layer := attn + mlp + 2*h // two RMSNorm weights
			embed := float64(m.Vocab) * h
			want := float64(m.Layers)*layer + embed + h
			if !m.TiedEmbedding {
				want += embed
			}
			if rel := math.Abs(m.Params-want) / want; rel > 1e-6 {
				t.Errorf("params %.0f, architecture implies %.0f (%.4f%% off)", m.Params, want, 100*rel)
			}
			if m.BytesPerParam != 2 || m.MaxPosition < 4096 {
				t.Errorf("bytes/param %v, max position %d", m.BytesPerParam, m.MaxPosition)
			}
		})
	}
}

func TestHardwareCalibration(t *testing.T) {
	for _, hw := range hardwareProfiles() {
		c := hw.Calib
		if !(c.GEMMEfficiency > 0 && c.GEMMEfficiency <= 1) {
			t.Errorf("%s: GEMM efficiency %v", hw.Name, c.GEMMEfficiency)
		}
		if c.KVReadFactor < 1 || c.WeightLoadFactor < 1 {
			t.Errorf("%s: factors %v, %v below the bandwidth bound", hw.Name, c.KVReadFactor, c.WeightLoadFactor)
		}
		if hw.PeakFLOPs <= 0 || hw.MemBandwidth <= 0 || hw.MemoryBytes <= 0 || hw.InterconnectBandwidth <= 0 {
			t.Errorf("%s: non-positive peak figure: %+v", hw.Name, hw)
		}
		// A dense BF16 ridge point between 100 and 500 FLOP/byte is what
		// every datacenter GPU of these generations has; far outside it a
		// figure was typed wrong (say, the sparsity number).
		if ridge := hw.PeakFLOPs / hw.MemBandwidth; ridge < 100 || ridge > 500 {
			t.Errorf("%s: ridge point %.0f FLOP/byte", hw.Name, ridge)
		}
	}
}
