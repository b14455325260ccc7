package costmodel

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

func parsed(t *testing.T, json string) profiles.Model {
	t.Helper()
	m, err := profiles.ParseConfig("test", []byte(json))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOneTokenTouchesTopK: a single token reaches exactly its top k
// experts, however unevenly the router spreads its tokens, and the
// experts' weights read are those k's.
func TestOneTokenTouchesTopK(t *testing.T) {
	for _, name := range []string{"mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v2-lite", "llama-4-scout-17b-16e-fp8", "gpt-oss-120b", "deepseek-v3"} {
		for _, imbalance := range []float64{1, 1.25, 2} {
			cm := costModel(t, "h200", name, 1)
			cm.HW.Calib.MoE.Imbalance = imbalance
			e := cm.Model.MoE
			c := cm.Step(decodeBatch(1, 512))
			k := float64(e.TopK)
			if math.Abs(c.MoE.Touched-k) > 1e-9*k || math.Abs(c.MoE.PerGPU-k) > 1e-9*k {
				t.Errorf("%s, imbalance %v: one token touched %v experts (%v on the GPU), want its top %d", name, imbalance, c.MoE.Touched, c.MoE.PerGPU, e.TopK)
			}
			f := cm.Model.Format(cm.Model.Weights.Experts)
			want := float64(e.Layers) * k * e.ExpertParams * f.Bytes
			if math.Abs(c.MoE.WeightBytes-want) > 1e-9*want {
				t.Errorf("%s: read %.4g bytes of experts, want the %d experts' %.4g", name, c.MoE.WeightBytes, e.TopK, want)
			}
		}
	}
}

// TestTouchedExperts: the expected distinct experts grow with the tokens
// towards all of them, as E·(1 − (1 − k/E)^T) under uniform routing;
// uneven routing reaches fewer with the same tokens.
func TestTouchedExperts(t *testing.T) {
	prev := 0.0
	for _, tokens := range []float64{1, 2, 8, 64, 512, 8192} {
		u := touched(128, 8, tokens, 0)
		if want := 128 * (1 - math.Pow(1-8.0/128, tokens)); math.Abs(u-want) > 1e-9*want {
			t.Errorf("%v tokens: %v experts, want %v", tokens, u, want)
		}
		if u <= prev || u > 128 {
			t.Errorf("%v tokens reach %v experts after %v", tokens, u, prev)
		}
		if tokens > 1 && tokens < 512 && touched(128, 8, tokens, 0.5) >= u {
			t.Errorf("%v tokens: uneven routing reaches %v experts, uniform %v", tokens, touched(128, 8, tokens, 0.5), u)
		}
		prev = u
	}
	if u := touched(128, 8, 8192, 0.5); u < 127.99 {
		t.Errorf("8192 tokens reach %v of 128 experts", u)
	}
}

// moeAndDense are a mixture of experts whose tokens each go to all its
// experts, and the dense model of the same weights: its MLP as wide as
// the experts together.
func moeAndDense(t *testing.T) (moe, dense profiles.Model) {
	shape := `"hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000, "num_hidden_layers": 16`
	moe = parsed(t, `{"model_type": "mixtral", `+shape+`, "num_local_experts": 4, "num_experts_per_tok": 4, "intermediate_size": 2048}`)
	dense = parsed(t, `{"model_type": "mistral", `+shape+`, "intermediate_size": 8192}`)
	return moe, dense
}

// TestTopKOfAllIsDense: with every token routed to every expert, the
// experts' GEMMs are the dense MLP's: the same weights read and FLOPs
// (the router's apart), and at a large step the same time within the
// router's and the groups' overlap.
func TestTopKOfAllIsDense(t *testing.T) {
	moe, dense := moeAndDense(t)
	for _, hw := range []string{"h200", "h100"} {
		h, _ := profiles.LookupHardware(hw)
		cm, cd := &Model{HW: h, Model: moe, TP: 1}, &Model{HW: h, Model: dense, TP: 1}
		for _, tokens := range []int{8192, 16384} {
			b := prefillBatch(tokens, 0)
			cmc, cdc := cm.Step(b), cd.Step(b)
			router := 2 * float64(tokens) * moe.ReplicatedMLP
			if got, want := cmc.FLOPs-router, cdc.FLOPs; math.Abs(got-want) > 1e-9*want {
				t.Errorf("%s, %d tokens: %.6g FLOPs with experts, %.6g dense", hw, tokens, got, want)
			}
			if !near(cmc.GEMM.Seconds(), cdc.GEMM.Seconds(), 0.03) {
				t.Errorf("%s, %d tokens: GEMMs %v with experts, %v dense", hw, tokens, cmc.GEMM, cdc.GEMM)
			}
			if cmc.MoE.Touched != 4 || cmc.MoE.TokensPerExpert != float64(tokens) {
				t.Errorf("%s: touched %v experts of %v tokens each", hw, cmc.MoE.Touched, cmc.MoE.TokensPerExpert)
			}
		}
	}
	// The weights read are the same too (the router's apart).
	h, _ := profiles.LookupHardware("h200")
	cm, cd := &Model{HW: h, Model: moe, TP: 2}, &Model{HW: h, Model: dense, TP: 2}
	c1, c2 := cm.Step(decodeBatch(64, 100)), cd.Step(decodeBatch(64, 100))
	if got, want := c1.ReadBytes-moe.ReplicatedMLP*2, c2.ReadBytes; math.Abs(got-want) > 1e-9*want {
		t.Errorf("read %.6g bytes with experts, %.6g dense", got, want)
	}
}

// TestExpertParallelism: whole experts on each GPU (EP) against every
// expert split over them (TP). With many tokens every GPU reads its
// Experts/N experts' weights either way, and with even routing the two
// are the same; with few tokens, or uneven routing, the GPU holding the
// busy experts makes EP the slower, never the faster. Across
// data-parallel ranks EP exchanges tokens around each MoE layer.
func TestExpertParallelism(t *testing.T) {
	for _, name := range []string{"mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v2-lite"} {
		for _, imbalance := range []float64{1, 1.5} {
			tpm := costModel(t, "h200", name, 4)
			tpm.HW.Calib.MoE.Imbalance = imbalance
			epm := *tpm
			epm.EP = 4
			for _, seqs := range []int{1, 8, 64, 1024} {
				b := decodeBatch(seqs, 1000)
				ct, ce := tpm.Step(b), epm.Step(b)
				if ce.MoE.GEMM < ct.MoE.GEMM || ce.MoE.WeightBytes < ct.MoE.WeightBytes*(1-1e-9) || ce.MoE.FLOPs < ct.MoE.FLOPs*(1-1e-9) {
					t.Errorf("%s, imbalance %v, %d tokens: EP %v, %.4g bytes, %.4g FLOPs; TP %v, %.4g, %.4g",
						name, imbalance, seqs, ce.MoE.GEMM, ce.MoE.WeightBytes, ce.MoE.FLOPs, ct.MoE.GEMM, ct.MoE.WeightBytes, ct.MoE.FLOPs)
				}
				if ce.AllToAll != 0 || ce.AllReduce != ct.AllReduce {
					t.Errorf("%s: EP over the TP GPUs exchanged %v, all-reduced %v (TP %v)", name, ce.AllToAll, ce.AllReduce, ct.AllReduce)
				}
			}
			big := decodeBatch(1024, 1000)
			ct, ce := tpm.Step(big), epm.Step(big)
			if !near(ce.MoE.WeightBytes, ct.MoE.WeightBytes, 1e-6) {
				t.Errorf("%s: %d tokens read %.4g bytes of experts a GPU under EP, %.4g under TP", name, 1024, ce.MoE.WeightBytes, ct.MoE.WeightBytes)
			}
			if imbalance == 1 && !near(ce.MoE.GEMM.Seconds(), ct.MoE.GEMM.Seconds(), 1e-6) {
				t.Errorf("%s: evenly routed, EP's experts take %v and TP's %v", name, ce.MoE.GEMM, ct.MoE.GEMM)
			}
		}
	}
	// Two data-parallel ranks of TP 2 (EP 4): each GPU's experts serve
	// both ranks' tokens, exchanged around every MoE layer in place of
	// its all-reduce.
	tp2 := costModel(t, "h200", "mixtral-8x7b", 2)
	dp := *tp2
	dp.EP = 4
	b := decodeBatch(64, 1000)
	c, c0 := dp.Step(b), tp2.Step(b)
	if c.AllToAll <= 0 || c.AllReduce >= c0.AllReduce || c.MoE.PerGPU > 2+1e-9 {
		t.Errorf("EP 4 over DP 2 × TP 2: exchange %v, all-reduce %v (TP 2 alone %v), %v experts a GPU", c.AllToAll, c.AllReduce, c0.AllReduce, c.MoE.PerGPU)
	}
}

// TestTensorParallelSplitsExperts: TP divides every expert's weights and
// FLOPs over the GPUs.
func TestTensorParallelSplitsExperts(t *testing.T) {
	base := costModel(t, "h100", "mixtral-8x7b", 1).Step(decodeBatch(256, 500))
	for _, tp := range []int{2, 4, 8} {
		c := costModel(t, "h100", "mixtral-8x7b", tp).Step(decodeBatch(256, 500))
		if !near(c.MoE.WeightBytes*float64(tp), base.MoE.WeightBytes, 1e-9) || !near(c.MoE.FLOPs*float64(tp), base.MoE.FLOPs, 1e-9) {
			t.Errorf("TP %d: %.4g bytes and %.4g FLOPs of experts a GPU; TP 1 %.4g and %.4g", tp, c.MoE.WeightBytes, c.MoE.FLOPs, base.MoE.WeightBytes, base.MoE.FLOPs)
		}
		if c.MoE.GEMM >= base.MoE.GEMM {
			t.Errorf("TP %d: experts take %v, TP 1 %v", tp, c.MoE.GEMM, base.MoE.GEMM)
		}
	}
}

// TestMoEMemory: every expert's weights count against the GPU's memory,
// touched or not; MLA's replicated down projections on every GPU.
func TestMoEMemory(t *testing.T) {
	h100, _ := profiles.LookupHardware("h100")
	m, _ := profiles.LookupModel("mixtral-8x7b")
	kv, err := KVCacheBytes(h100, m, 2, 0.9, 0)
	// Half of every weight a GPU, and the router's other half: each GPU
	// keeps the router whole.
	want := 0.9*h100.MemoryBytes - m.WeightBytes()/2 - m.ReplicatedMLP*m.BytesPerParam/2 - h100.Calib.ActivationReserveBytes
	if err != nil || math.Abs(float64(kv)-want) > 1 {
		t.Errorf("Mixtral on 2× H100: %d KV bytes, want %.0f (%v)", kv, want, err)
	}
	if _, err := KVCacheBytes(h100, m, 1, 0.9, 0); err == nil {
		t.Error("Mixtral's 93 GB fit one H100")
	}
	v3, _ := profiles.LookupModel("deepseek-v3")
	if _, err := KVCacheBytes(h100, v3, 8, 0.9, 0); err == nil {
		t.Error("DeepSeek-V3's 671 GB fit eight 80 GB H100s")
	}
	h200, _ := profiles.LookupHardware("h200")
	if kv, err := KVCacheBytes(h200, v3, 8, 0.9, 0); err != nil || kv <= 0 {
		t.Errorf("DeepSeek-V3 on 8× H200: %d, %v", kv, err)
	}
	per := WeightBytesPerGPU(&v3, 8, 8)
	if per <= v3.WeightBytes()/8 || per > v3.WeightBytes()/8+v3.ReplicatedAttention+v3.ReplicatedMLP*2 {
		t.Errorf("DeepSeek-V3 holds %.4g bytes a GPU of 8, an eighth is %.4g", per, v3.WeightBytes()/8)
	}
}

// TestEveryReferenceModelPrices: every config.json of
// ../shared/reference/models loads, fits some H100s or H200s, and prices
// decodes and prefills.
func TestEveryReferenceModelPrices(t *testing.T) {
	dir := reftest.Path(t, "reference", "models")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			m, err := profiles.ReadConfig(filepath.Join(dir, e.Name(), "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			cm, err := fitting(m)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range [][]Seq{decodeBatch(1, 100), decodeBatch(128, 3000), prefillBatch(2048, 0), prefillBatch(512, 3000)} {
				c := cm.Step(b)
				if !(c.Duration > 0) || !(c.FLOPs > 0) || !(c.ReadBytes > 0) || math.IsInf(c.FLOPs, 0) {
					t.Errorf("on %d× %s: %+v", cm.TP, cm.HW.Name, c)
				}
				if (m.MoE != nil) != (c.MoE.Touched > 0) {
					t.Errorf("%v experts touched of %+v", c.MoE.Touched, m.MoE)
				}
			}
		})
	}
	if n < 12 {
		t.Errorf("%d models in %s, want the 12 it holds", n, dir)
	}
}

// fitting is m on the fewest H100s (then H200s) whose memory holds it.
func fitting(m profiles.Model) (*Model, error) {
	for _, hw := range []string{"h100", "h200"} {
		h, _ := profiles.LookupHardware(hw)
		for _, tp := range []int{1, 2, 4, 8} {
			if m.CheckTP(tp) != nil {
				continue
			}
			if kv, err := KVCacheBytes(h, m, tp, 0.9, 0); err == nil && kv > 1<<30 {
				return &Model{HW: h, Model: m, TP: tp}, nil
			}
		}
	}
	return nil, fmt.Errorf("%s fits no 8 GPUs", m.Name)
}

// TestCheckpointFormats: a checkpoint's own formats price each class of
// weights (Scout's FP8 experts at one byte on FP8 tensor cores where the
// GPU has them, widened to bf16 where it has none, its attention bf16);
// --quantization may name the checkpoint's method and no other.
func TestCheckpointFormats(t *testing.T) {
	scout := costModel(t, "h100", "llama-4-scout-17b-16e-fp8", 2)
	c := scout.Step(decodeBatch(1, 100))
	e := scout.Model.MoE
	if want := float64(e.Layers) * e.ExpertParams / 2; !near(c.MoE.WeightBytes, want, 1e-9) {
		t.Errorf("Scout's one expert a layer: %.4g bytes a GPU, want %.4g at one byte a weight", c.MoE.WeightBytes, want)
	}
	if f := scout.Model.Format(scout.Model.Weights.Attention); f.Bytes != 2 {
		t.Errorf("Scout's attention in %+v", f)
	}
	if raw, _, _, _ := scout.rate(scout.Model.Weights.Experts); raw != scout.HW.PeakFP8FLOPs {
		t.Errorf("Scout's experts on H100 at %v FLOP/s, want its FP8 peak", raw)
	}
	a100 := costModel(t, "a100-80g", "llama-4-scout-17b-16e-fp8", 4)
	if raw, _, _, _ := a100.rate(a100.Model.Weights.Experts); raw != a100.HW.PeakFLOPs {
		t.Errorf("Scout's experts on A100 at %v FLOP/s, want its bf16 peak (weight-only FP8)", raw)
	}
	hw := scout.HW
	m := scout.Model
	if err := SetDtypes(&hw, &m, "fp8", "auto"); err == nil || !strings.Contains(err.Error(), "compressed-tensors") {
		t.Errorf("--quantization fp8 on a compressed-tensors checkpoint: %v", err)
	}
	v3 := costModel(t, "h200", "deepseek-v3", 8).Model
	if err := SetDtypes(&hw, &v3, "fp8", "auto"); err != nil || v3.FP8 {
		t.Errorf("--quantization fp8 on an fp8 checkpoint: %v (the checkpoint's formats kept: %v)", err, !v3.FP8)
	}
}
