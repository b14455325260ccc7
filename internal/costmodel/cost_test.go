package costmodel

import (
	"encoding/csv"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

func costModel(t *testing.T, hw, model string, tp int) *Model {
	t.Helper()
	h, err := profiles.LookupHardware(hw)
	if err != nil {
		t.Fatal(err)
	}
	m, err := profiles.LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	return &Model{HW: h, Model: m, TP: tp}
}

// decodeBatch is n sequences each decoding one token after ctx tokens.
func decodeBatch(n, ctx int) []Seq {
	var b []Seq
	for range n {
		b = append(b, Seq{Tokens: 1, Pos: ctx, NumPrompt: ctx / 2, Sample: true})
	}
	return b
}

// prefillBatch is one sequence prefilling tokens prompt tokens from pos.
func prefillBatch(tokens, pos int) []Seq {
	return []Seq{{Tokens: tokens, Pos: pos, NumPrompt: pos + tokens, Sample: true}}
}

func overhead(cm *Model, seqs int) time.Duration {
	c := cm.HW.Calib
	return c.StepOverhead + time.Duration(cm.Model.Layers)*c.LayerOverhead + time.Duration(seqs)*c.RequestOverhead
}

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

func TestDecodeBatchOneIsMemoryBound(t *testing.T) {
	for _, hw := range []string{"h200", "h100", "a100-80g", "l40s"} {
		cm := costModel(t, hw, "llama-3.1-8b", 1)
		c := cm.Step(decodeBatch(1, 512))
		if !c.MemoryBound() {
			t.Errorf("%s: batch-1 decode GEMMs are not bound by the weight read", hw)
		}
		// Every weight but the input embedding, a row lookup; with the
		// overlapped GEMMs, each of the 4 per layer and the LM head's
		// latency too.
		read := (cm.Model.WeightBytes() - float64(cm.Model.Vocab*cm.Model.Hidden)*cm.Model.BytesPerParam) / cm.HW.MemBandwidth
		// The KV of its 513 tokens at the profile's factor (3.4× on the
		// A100, whose fit put its decode's growth with load there).
		kv := 513 * float64(cm.Model.KVBytesPerToken(1)) / cm.HW.MemBandwidth
		want := seconds(read*cm.HW.Calib.WeightLoadFactor+kv*cm.HW.Calib.KVReadFactor) + overhead(cm, 1)
		if cm.HW.Calib.GEMMOverlap > 1 {
			want += time.Duration(4*cm.Model.Layers+1) * cm.HW.Calib.GEMMKernelLatency
		}
		// The elementwise kernels and the new KV written add well under 1%.
		if !near(c.Duration.Seconds(), want.Seconds(), 0.01) {
			t.Errorf("%s: batch-1 decode %v, want about %v (weights/bandwidth × %.2f + overheads)",
				hw, c.Duration, want, cm.HW.Calib.WeightLoadFactor)
		}
		if c.DecodeTokens != 1 || c.PrefillTokens != 0 || c.Sampled != 1 {
			t.Errorf("%s: counted %+v", hw, c)
		}
	}
}

func TestPrefillIsComputeBound(t *testing.T) {
	cm := costModel(t, "h200", "llama-3.1-8b", 1)
	c := cm.Step(prefillBatch(8192, 0))
	if c.MemoryBound() {
		t.Fatal("an 8k prefill's GEMMs are bound by the weight read")
	}
	arith := 2 * cm.Model.MatmulParams() * 8192 / (cm.HW.PeakFLOPs * cm.HW.Calib.GEMMEfficiency)
	if got := c.GEMM.Seconds(); got < arith || got > 1.05*arith {
		t.Errorf("GEMMs %v, want the arithmetic %v plus a weight read", c.GEMM, seconds(arith))
	}
	if c.PrefillTokens != 8192 || c.DecodeTokens != 0 {
		t.Errorf("counted prefill %d decode %d", c.PrefillTokens, c.DecodeTokens)
	}
}

// TestGEMMsMatchVidur prices one decoder layer's projections and MLP, and
// its elementwise kernels, against Vidur's CUDA timings of the same layer
// (reference/calibration/README.md §B) from 1 to 8192 tokens: the profile
// constants must reproduce measured kernels, not just fit end-to-end runs.
func TestGEMMsMatchVidur(t *testing.T) {
	for _, tc := range []struct{ file, hw string }{
		{"vidur_h100_llama2_7b_mlp.csv", "h100"},
		{"vidur_a100_llama3_8b_mlp.csv", "a100-80g"},
	} {
		path := reftest.Path(t, "reference", "calibration", tc.file)
		if path == "" {
			return
		}
		hw, err := profiles.LookupHardware(tc.hw)
		if err != nil {
			t.Fatal(err)
		}
		rows := readVidur(t, path)
		var linErr, allErr []float64
		for _, r := range rows {
			if r.tokens > 8192 || r.tp != 1 {
				continue
			}
			cal := hw.Calib
			w := r.params * 2
			gemm := max(w*cal.WeightLoadFactor/hw.MemBandwidth, w/hw.MemBandwidth+2*r.params*float64(r.tokens)/(hw.PeakFLOPs*cal.GEMMEfficiency))
			elem := cal.ActivationPasses * float64(r.tokens) * float64(r.hidden) * 2 / hw.MemBandwidth
			linErr = append(linErr, math.Abs(gemm/r.linear-1))
			allErr = append(allErr, math.Abs((gemm+elem)/(r.linear+r.other)-1))
		}
		if len(linErr) < 100 {
			t.Fatalf("%s: only %d rows of TP1 timings", tc.file, len(linErr))
		}
		slices.Sort(linErr)
		slices.Sort(allErr)
		medLin, medAll, p90 := linErr[len(linErr)/2], allErr[len(allErr)/2], allErr[len(allErr)*9/10]
		t.Logf("%s on %s: median error %.1f%% (GEMMs), %.1f%% (with elementwise), p90 %.1f%%, %d token counts",
			tc.hw, tc.file, 100*medLin, 100*medAll, 100*p90, len(allErr))
		if medLin > 0.06 || medAll > 0.08 || p90 > 0.2 {
			t.Errorf("%s: the profile is %.1f%% (median) / %.1f%% (p90) off Vidur's kernel timings; want within 8%% / 20%%",
				tc.hw, 100*medAll, 100*p90)
		}
	}
}

type vidurRow struct {
	tokens, tp, hidden int
	params             float64 // one layer's projection and MLP weights
	linear, other      float64 // seconds: the GEMMs; norms, RoPE, activation, adds
}

func readVidur(t *testing.T, path string) []vidurRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	num := func(r []string, name string) float64 {
		i, ok := col[name]
		if !ok {
			t.Fatalf("%s: no column %s", path, name)
		}
		v, err := strconv.ParseFloat(r[i], 64)
		if err != nil {
			if b, err := strconv.ParseBool(r[i]); err == nil && b {
				return 1
			}
			t.Fatalf("%s: %s = %q", path, name, r[i])
		}
		return v
	}
	ms := func(r []string, ops ...string) float64 {
		s := 0.0
		for _, op := range ops {
			s += num(r, "time_stats."+op+".median")
		}
		return s / 1e3
	}
	var out []vidurRow
	for _, r := range recs[1:] {
		d, dff, h, kv := num(r, "n_embd"), num(r, "n_expanded_embd"), num(r, "n_head"), num(r, "n_kv_head")
		out = append(out, vidurRow{
			tokens: int(num(r, "num_tokens")), tp: int(num(r, "num_tensor_parallel_workers")), hidden: int(d),
			params: d*(d+2*kv*d/h) + d*d + 3*d*dff,
			linear: ms(r, "attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj"),
			other:  ms(r, "input_layernorm", "attn_rope", "post_attention_layernorm", "mlp_act", "add"),
		})
	}
	return out
}

func TestAttentionGrowsWithContext(t *testing.T) {
	cm := costModel(t, "h200", "llama-3.1-8b", 1)
	early, late := cm.Step(prefillBatch(2048, 0)), cm.Step(prefillBatch(2048, 30000))
	if late.FLOPs <= early.FLOPs || late.ReadBytes <= early.ReadBytes || late.Duration <= early.Duration {
		t.Errorf("a chunk at position 30000 is not dearer than at 0: %+v vs %+v", late, early)
	}
	short, long := cm.Step(decodeBatch(64, 100)), cm.Step(decodeBatch(64, 16000))
	if long.Attention <= short.Attention {
		t.Errorf("decode over 16k context attention %v <= over 100 tokens %v", long.Attention, short.Attention)
	}
}

func TestDecodeBatchingIsSublinear(t *testing.T) {
	cm := costModel(t, "h100", "llama-3.1-8b", 1)
	prev := cm.Step(decodeBatch(1, 1024))
	for n := 2; n <= 512; n *= 2 {
		c := cm.Step(decodeBatch(n, 1024))
		if c.Duration <= prev.Duration || c.Duration >= 2*prev.Duration {
			t.Errorf("batch %d step %v, batch %d step %v: want more but less than double", n, c.Duration, n/2, prev.Duration)
		}
		prev = c
	}
}

func TestTensorParallel(t *testing.T) {
	for _, b := range [][]Seq{decodeBatch(1, 1000), decodeBatch(128, 2000), prefillBatch(4096, 0)} {
		one := costModel(t, "h200", "llama-3.1-70b", 1).Step(b)
		two := costModel(t, "h200", "llama-3.1-70b", 2).Step(b)
		if one.AllReduce != 0 || two.AllReduce <= 0 {
			t.Errorf("all-reduce tp1 %v tp2 %v", one.AllReduce, two.AllReduce)
		}
		if two.Duration >= one.Duration {
			t.Errorf("tp2 step %v not faster than tp1 %v", two.Duration, one.Duration)
		}
		if !near(two.FLOPs, one.FLOPs/2, 1e-9) {
			t.Errorf("per-GPU FLOPs tp2 %v, tp1 %v", two.FLOPs, one.FLOPs)
		}
		if two.ReadBytes >= one.ReadBytes || two.WriteBytes >= one.WriteBytes {
			t.Errorf("per-GPU bytes did not shrink: tp1 %v/%v tp2 %v/%v", one.ReadBytes, one.WriteBytes, two.ReadBytes, two.WriteBytes)
		}
	}
	// The all-reduce grows with the tokens in the step and with a slower link.
	small := costModel(t, "h100", "llama-3.1-70b", 2).Step(decodeBatch(1, 100))
	big := costModel(t, "h100", "llama-3.1-70b", 2).Step(prefillBatch(8192, 0))
	pcie := costModel(t, "l40s", "llama-3.1-70b", 2).Step(prefillBatch(8192, 0))
	if !(small.AllReduce < big.AllReduce && big.AllReduce < pcie.AllReduce) {
		t.Errorf("all-reduce: decode %v, nvlink prefill %v, pcie prefill %v", small.AllReduce, big.AllReduce, pcie.AllReduce)
	}
}

func TestReplicatedKVHeads(t *testing.T) {
	m, err := profiles.LookupModel("llama-3.1-70b") // 8 KV heads
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tp, heads int }{{1, 8}, {2, 4}, {8, 1}, {16, 1}} {
		if got := m.KVHeadsPerGPU(tc.tp); got != tc.heads {
			t.Errorf("tp %d: %d KV heads per GPU, want %d", tc.tp, got, tc.heads)
		}
	}
}

func TestWorkEstimates(t *testing.T) {
	cm := costModel(t, "h200", "llama-3.1-8b", 1)
	kv := float64(cm.Model.KVBytesPerToken(1))
	c := cm.Step(decodeBatch(8, 999))
	// Attention over 1,000 tokens adds about 3% to the dense matmuls; the
	// embedding multiplies nothing.
	if want := 8 * 2 * (cm.Model.Params - float64(cm.Model.Vocab*cm.Model.Hidden)); !near(c.FLOPs, want, 0.05) {
		t.Errorf("decode FLOPs %.3g, want about 2·params per token = %.3g", c.FLOPs, want)
	}
	embedding := float64(cm.Model.Vocab*cm.Model.Hidden) * cm.Model.BytesPerParam
	if want := cm.Model.WeightBytes() - embedding + 8*1000*kv; !near(c.ReadBytes, want, 1e-9) {
		t.Errorf("read bytes %.6g, want weights but the embedding + context KV = %.6g", c.ReadBytes, want)
	}
	if want := 8 * kv; c.WriteBytes != want {
		t.Errorf("write bytes %v, want %v", c.WriteBytes, want)
	}
	if got := cm.Step(nil); got != (Cost{}) {
		t.Errorf("empty batch costs %+v", got)
	}
}

// TestMixedStepSharesTheWeightRead: a decode batch riding along a prefill
// chunk costs much less than running alone, since the weights are read once.
func TestMixedStepSharesTheWeightRead(t *testing.T) {
	cm := costModel(t, "h100", "llama-3.1-8b", 1)
	p, d := prefillBatch(1024, 0), decodeBatch(64, 500)
	mixed := append(append([]Seq{}, p...), d...)
	cp, cd, cmix := cm.Step(p), cm.Step(d), cm.Step(mixed)
	if cmix.Duration <= cp.Duration || cmix.Duration-cp.Duration >= cd.Duration/2 {
		t.Errorf("mixed step %v: prefill alone %v, decode alone %v; want the decode to add under half its own time",
			cmix.Duration, cp.Duration, cd.Duration)
	}
	if cmix.PrefillTokens != 1024 || cmix.DecodeTokens != 64 {
		t.Errorf("counted prefill %d decode %d", cmix.PrefillTokens, cmix.DecodeTokens)
	}
}

func TestKVCacheBytes(t *testing.T) {
	h200, _ := profiles.LookupHardware("h200")
	a100, _ := profiles.LookupHardware("a100-80g")
	m8, _ := profiles.LookupModel("llama-3.1-8b")
	m70, _ := profiles.LookupModel("llama-3.1-70b")
	q05, _ := profiles.LookupModel("qwen2.5-0.5b")

	got, err := KVCacheBytes(h200, m8, 1, 0.92, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := 0.92*141e9 - 16.06e9 - h200.Calib.ActivationReserveBytes
	if !near(float64(got), want, 0.001) {
		t.Errorf("8b on h200 at 0.92: %d bytes, want about %.4g", got, want)
	}
	if blocks := KVBlocks(got, m8, 1, 16); blocks != int(got/(16*131072)) || blocks < 50000 {
		t.Errorf("8b on h200: %d blocks of 16 tokens", blocks)
	}

	for _, tc := range []struct {
		name    string
		hw      profiles.Hardware
		m       profiles.Model
		tp      int
		util    float64
		errWant string
	}{
		{"70b on one a100", a100, m70, 1, 0.9, "--gpu-memory-utilization"},
		{"70b on two a100", a100, m70, 2, 0.9, "--tensor-parallel-size"},
		{"util above 1", h200, m8, 1, 1.5, "--gpu-memory-utilization"},
		{"util zero", h200, m8, 1, 0, "--gpu-memory-utilization"},
		{"util NaN", h200, m8, 1, math.NaN(), "--gpu-memory-utilization"},
		{"heads not divisible", h200, q05, 4, 0.9, "--tensor-parallel-size"},
	} {
		if _, err := KVCacheBytes(tc.hw, tc.m, tc.tp, tc.util, 0); err == nil || !strings.Contains(err.Error(), tc.errWant) {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.errWant)
		}
	}
	if got, err := KVCacheBytes(a100, m70, 4, 0.9, 0); err != nil || got <= 0 {
		t.Errorf("70b on four a100: %d, %v", got, err)
	}
	if got, err := KVCacheBytes(a100, m70, 1, 0.9, 5<<30); err != nil || got != 5<<30 {
		t.Errorf("override: %d, %v", got, err)
	}
	if _, err := KVCacheBytes(a100, m70, 1, 0.9, -1); err == nil {
		t.Error("negative override accepted")
	}
}

// TestLoRAParams: an adapter's parameters at a rank, over every linear
// layer of the model.
func TestLoRAParams(t *testing.T) {
	cm := costModel(t, "h100", "llama-3.1-8b", 1)
	// Llama-3.1-8B at rank 16: 16·(4096+4096 + 2·(4096+1024) + 4096+4096 + 2·(4096+14336) + 14336+4096)·32 ≈ 42M parameters, 84 MB.
	if p := loraParams(&cm.Model, 16); p < 41e6 || p > 43e6 {
		t.Errorf("adapter of %.1fM parameters, want about 42M", p/1e6)
	}
	if c := cm.LoRA(16, 0, 0, 8); c != (LoRACost{}) {
		t.Errorf("no adapters cost %+v", c)
	}
	one, two := cm.LoRA(16, 1, 0, 8), cm.LoRA(16, 2, 1, 8)
	if one.Compute <= 0 || one.Load != 0 || two.Bytes != 2*one.Bytes || two.Load <= 0 {
		t.Errorf("one resident adapter %+v, two with one loaded %+v", one, two)
	}
}
