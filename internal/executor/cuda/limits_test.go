package cuda

import (
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// TestPrefillFitsSM86: at head dim 128 the CUDA-core prefill kernel's 64
// query rows take 107,648 bytes of shared memory, past the 99 KiB a
// block has on compute capability 8.6 and 8.9 (A10, L40S, RTX): there its
// items take fewer tokens, and its launches fit. (It used to fail at the
// first prefill wherever the tensor-core kernel was off.)
func TestPrefillFitsSM86(t *testing.T) {
	for _, c := range []struct {
		info        *cuda.Device
		s           attnShape
		flash, tiny int // tokens an item: tensor-core, CUDA-core
	}{
		{sm86, llama8B, 16, 14},
		{h100, llama8B, 16, 16},
		{sm86, attnShape{heads: 16, kvHeads: 8, headDim: 256, blockSize: 16}, 0, 8}, // gemma's head dim: CUDA cores only
		{sm86, attnShape{heads: 14, kvHeads: 2, headDim: 64, blockSize: 16}, 9, 9},
	} {
		ks := kernelsFor(c.info, c.s)
		if ks.flashTokens != c.flash || ks.plainTokens != c.tiny {
			t.Errorf("%s, head dim %d, %d heads a KV head: %d and %d tokens an item, want %d and %d", c.info.Name, c.s.headDim, c.s.group(),
				ks.flashTokens, ks.plainTokens, c.flash, c.tiny)
		}
		if err := checkLimits(c.info, c.s, Sizes{MaxSeqs: 256}); err != nil {
			t.Errorf("%s, head dim %d: %v", c.info.Name, c.s.headDim, err)
		}
		d, recs := recordingDevice(t, c.info)
		ks.flash = false // as when the self-check turns the tensor cores off
		if err := d.prefill(ks, cuda.BF16, c.s, 1, 0, 1, 1, 64, 128, 1, 1, 1); err != nil {
			t.Errorf("%s, head dim %d: %v", c.info.Name, c.s.headDim, err)
		} else if r := (*recs)[0]; r.shared > c.info.SharedOptin {
			t.Errorf("%s: %d bytes of shared memory", r.name, r.shared)
		}
	}
}

// TestHeadDimsRefusedAtLoad: a head dim whose prefill rows cannot fit
// the GPU's shared memory, which CheckWeights accepts (up to 1024), is
// refused by name when the model is loaded, before any device memory is
// spent, not at its first prefill.
func TestHeadDimsRefusedAtLoad(t *testing.T) {
	s512 := attnShape{heads: 8, kvHeads: 8, headDim: 512, blockSize: 16}
	if err := checkLimits(h100, s512, Sizes{MaxSeqs: 256}); err != nil {
		t.Errorf("head dim 512 on an H100: %v", err)
	}
	for _, c := range []struct {
		info *cuda.Device
		s    attnShape
	}{{sm86, s512}, {h100, attnShape{heads: 8, kvHeads: 8, headDim: 1024, blockSize: 16}}} {
		err := checkLimits(c.info, c.s, Sizes{MaxSeqs: 256})
		if err == nil || !strings.Contains(err.Error(), "shared memory") || !strings.Contains(err.Error(), c.info.Name) {
			t.Errorf("head dim %d on %s: %v", c.s.headDim, c.info.Name, err)
		}
	}
	w := tinyWeights(512)
	if err := CheckWeights(w); err != nil {
		t.Fatal(err)
	}
	_, err := (&Device{Info: sm86}).Upload(w, Sizes{MaxTokens: 256, MaxSeqs: 16, MaxModelLen: 512, BlockSize: 16})
	if err == nil || !strings.Contains(err.Error(), "head dim 512") {
		t.Errorf("upload of a head dim 512 model on sm_86: %v", err)
	}
}

// tinyWeights is a model shape with head dim hd (no data: for the checks
// made before any upload).
func tinyWeights(hd int) *model.Weights {
	m := &tensor.Matrix{Type: gguf.F16}
	c := model.Config{Arch: "llama", Layers: 1, Hidden: 8 * hd, Heads: 8, KVHeads: 8, HeadDim: hd, FFN: 64, Vocab: 64}
	return &model.Weights{Config: c, Embed: m, Output: m, Layers: []model.Layer{{Q: m, K: m, V: m, O: m, Gate: m, Up: m, Down: m}}}
}

// TestLongStepsLaunch: silu_mul's grid holds a step's tokens on x (its y
// held them, and failed past 65,535 batched tokens); more sequences than
// decode attention's grid holds are refused at load.
func TestLongStepsLaunch(t *testing.T) {
	d, recs := recordingDevice(t, h100)
	for _, dt := range []cuda.DType{cuda.F32, cuda.F16, cuda.BF16} {
		if err := d.siluMul(dt, 1, 1, 1, 70000, 4864); err != nil {
			t.Errorf("silu_mul over 70000 tokens: %v", err)
		}
	}
	for _, r := range *recs {
		if r.grid.X*r.block.X < 70000 && r.grid.Y*r.block.Y < 70000 {
			t.Errorf("%s: grid %+v of %+v covers no 70000 tokens", r.name, r.grid, r.block)
		}
	}
	err := checkLimits(h100, llama8B, Sizes{MaxTokens: 70000, MaxSeqs: 70000})
	if err == nil || !strings.Contains(err.Error(), "--max-num-seqs") {
		t.Errorf("70000 sequences a step: %v", err)
	}
}

// TestKVCacheType: a BF16 model keeps a bf16 cache (vLLM's auto: the
// model's type; it was fp16 for every model), the others fp16; naming
// the other type is refused by name.
func TestKVCacheType(t *testing.T) {
	for _, c := range []struct {
		typ        gguf.TensorType
		flag, want string
	}{
		{gguf.BF16, "", "bf16"}, {gguf.BF16, "auto", "bf16"}, {gguf.BF16, "bfloat16", "bf16"}, {gguf.BF16, "fp16", ""},
		{gguf.F16, "", "fp16"}, {gguf.F16, "half", "fp16"}, {gguf.F16, "bf16", ""}, {gguf.Q8_0, "", "fp16"}, {gguf.F32, "auto", "fp16"},
	} {
		w := tinyWeights(64)
		w.Layers[0].Q = &tensor.Matrix{Type: c.typ}
		got, err := KVCacheType(w, c.flag)
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("%s model, --kv-cache-dtype %q: %q, %v; want %q", c.typ, c.flag, got, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), "--kv-cache-dtype "+c.flag) {
			t.Errorf("the refusal does not name the flag: %v", err)
		}
	}
}
