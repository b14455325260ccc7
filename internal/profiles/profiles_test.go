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

// TestModelShapes checks each built-in's weights, counted from its
// config.json, against the published count: the safetensors index's
// exactly for the dense models (which catches a mistyped or misread
// config value), the model card's total for the mixtures of experts.
func TestModelShapes(t *testing.T) {
	exact := map[string]float64{
		"llama-3.1-8b": 8_030_261_248, "llama-3.1-70b": 70_553_706_496, "llama-3.2-1b": 1_235_814_400,
		"llama-3.2-3b": 3_212_749_824, "llama-2-7b": 6_738_415_616, "llama-2-70b": 68_976_648_192,
		"codellama-34b": 33_743_970_304, "qwen2.5-7b": 7_615_616_512, "qwen2.5-0.5b": 494_032_768,
		"qwen3-14b": 14_768_307_200, "qwen3-32b": 32_762_123_264,
		"mistral-nemo-12b": 12_247_782_400, "yi-34b": 34_388_917_248, "mixtral-8x7b": 46_702_792_704,
	}
	// Model cards' totals and active weights, in billions, and how far
	// the count may be from the total (the digits the card gives).
	cards := map[string]struct{ total, active, off float64 }{
		"mixtral-8x22b":             {140.6, 39, 0.05},  // 140.6B total, 39B active
		"qwen3-30b-a3b":             {30.5, 3.3, 0.05},  // 30.5B, 3.3B activated
		"deepseek-v2-lite":          {15.7, 2.4, 0.05},  // 15.7B, 2.4B active
		"deepseek-v3":               {671, 36.6, 0.5},   // 671B and 36.6B with the head, the MTP layer's 11.5B apart
		"gpt-oss-120b":              {116.8, 5.1, 0.05}, // 116.8B total, 5.1B active
		"llama-4-scout-17b-16e-fp8": {109, 17, 1},       // 109B total, 17B active (its vision encoder approximated)
	}
	for _, name := range ModelNames() {
		t.Run(name, func(t *testing.T) {
			m, err := LookupModel(name)
			if err != nil {
				t.Fatal(err)
			}
			if m.Heads%m.KVHeads != 0 {
				t.Errorf("heads %d not a multiple of KV heads %d", m.Heads, m.KVHeads)
			}
			if m.BytesPerParam != 2 || m.MaxPosition < 4096 {
				t.Errorf("bytes/param %v, max position %d", m.BytesPerParam, m.MaxPosition)
			}
			if want, ok := exact[name]; ok {
				if m.Params != want {
					t.Errorf("params %.0f, the published count is %.0f", m.Params, want)
				}
				return
			}
			c, ok := cards[name]
			if !ok {
				t.Fatalf("no published count to check %s against", name)
			}
			// Cards count the LM head among the active weights, some the
			// embedding too.
			active := m.ActiveParams() + m.HeadParams()
			withEmbedding := active + float64(m.Vocab)*float64(m.Hidden)
			if math.Abs(m.Params/1e9-c.total) > c.off ||
				math.Abs(active/1e9-c.active) > 0.05*c.active && math.Abs(withEmbedding/1e9-c.active) > 0.05*c.active {
				t.Errorf("%.2fB weights, %.2fB active (%.2fB with the embedding); the model card says %vB and %vB",
					m.Params/1e9, active/1e9, withEmbedding/1e9, c.total, c.active)
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
