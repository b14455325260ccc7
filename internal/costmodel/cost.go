// Package costmodel prices a step of an LLM server on simulated GPUs: a
// roofline of each kernel family (GEMMs, attention, elementwise kernels,
// all-reduces) from a hardware and a model profile, times the hardware's
// calibrated coefficients, plus fixed overheads (cost.go): the GEMMs by
// their weights' formats (gemm.go), attention over full, sliding-window
// and chunked layers, GQA or MLA (attention.go), a mixture of experts'
// routed experts under tensor or expert parallelism (moe.go); what the GPU's
// activity counters read while those kernels run and what dcgm-exporter
// shows of a window of them (counters.go); the KV cache a deployment has
// room for, in the dtypes it keeps (memory.go); and LoRA adapters' work
// (lora.go).
//
// The simulated executor, the simulated dcgm-exporter, calibration and the
// planner share it. It reads the profiles table and nothing else of
// glassbox: a step comes in as its own small description (Seq), so it never
// imports the engine or an executor (internal/layering's test holds that).
package costmodel

import (
	"cmp"
	"time"

	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// Model prices one engine step on TP GPUs of HW running Model with the
// coefficients of HW.Calib; see Step.
type Model struct {
	HW    profiles.Hardware
	Model profiles.Model
	TP    int // tensor-parallel degree, >= 1
	// EP is the expert-parallel degree of a mixture of experts (vLLM's
	// --enable-expert-parallel: TP × DP GPUs, whole experts on each); 0
	// (or TP's or less) splits every expert's columns over the TP GPUs.
	EP int
}

// Seq is what pricing reads of one sequence of a step: Tokens computed
// from position Pos (the Pos before them have their K/V cached), the
// prompt's length, and whether the step samples a token for it (the LM
// head runs on its last row). A single token at or past the prompt is a
// decode; anything else is a prefill chunk.
type Seq struct {
	Tokens    int
	Pos       int
	NumPrompt int
	Sample    bool
}

// Cost is the price of one step. Times are on the simulated GPU; the work
// estimates are per GPU and uncalibrated, as vLLM's
// vllm:estimated_{flops,read_bytes,write_bytes}_per_gpu_total count them.
type Cost struct {
	Duration time.Duration // GEMM + Attention + Elementwise + AllReduce + Overhead (+ LoRA, LoRALoad, Draft)

	GEMM time.Duration // projections, MLP and LM head
	// WeightRead and DecodeKVRead are the ideal (bandwidth-bound) times of
	// the weight read and the decode attention's KV read, before the
	// calibrated factors: the terms a calibration fits.
	WeightRead, DecodeKVRead time.Duration
	Attention                time.Duration // KV reads and writes, prefill attention's arithmetic
	Elementwise              time.Duration // the small kernels' activation traffic
	AllReduce                time.Duration // tensor-parallel communication
	// AllToAll is expert parallelism's exchange of tokens between
	// data-parallel ranks around each MoE layer.
	AllToAll time.Duration
	Overhead time.Duration // per step, layer and sequence (and MoE layer's routing)
	// MoE is what a mixture of experts' routed experts took (within GEMM,
	// Elementwise, Overhead and the work estimates).
	MoE MoECost
	// LoRA is the step's adapters' work and LoRALoad the copy of those
	// the GPU had no slot for (only with LoRA; in Duration).
	LoRA, LoRALoad time.Duration
	// Draft is a draft model's passes after the target's (DraftPasses of
	// them; in Duration, and their work in the estimates below, averaged
	// over the target's GPUs). Only Execute prices them.
	Draft       time.Duration
	DraftPasses int
	// Host is the profile's host work after the GPU part (Duration),
	// with the GPU idle; the engine waits it out after Execute.
	Host time.Duration
	// Activity is what the GPU's activity counters read while the
	// target's pass runs (counters.go).
	Activity Activity

	FLOPs      float64 // per GPU
	ReadBytes  float64 // per GPU: weights once plus the KV read
	WriteBytes float64 // per GPU: the KV written

	Seqs          int
	PrefillTokens int
	DecodeTokens  int
	Sampled       int

	memoryBound bool
}

// MoECost is a step's routed experts: the experts a MoE layer reads
// weights of (Touched over all GPUs, PerGPU on the one that sets the
// pace: TP slices of each, or whole experts under expert parallelism),
// the tokens each touched expert multiplies, the busiest GPU's share of
// the routed tokens over the mean, their grouped GEMMs' time, weights
// read and FLOPs per GPU, and the routing kernels' time.
type MoECost struct {
	Touched, PerGPU, TokensPerExpert, Imbalance float64
	GEMM, Routing                               time.Duration
	WeightBytes, FLOPs                          float64
}

// MemoryBound reports whether the weight read, not the arithmetic, set the
// GEMMs' time.
func (c *Cost) MemoryBound() bool { return c.memoryBound }

// Step prices a step's sequences as the sum of its kernel families, which run one
// after another:
//   - the GEMMs (projections, MLP, and the LM head on the sampled rows;
//     gemm.go): with the additive profile (GEMMOverlap ≤ 1) the slower of
//     the weight read at the calibrated efficiency and the ideal weight
//     read plus the arithmetic at GEMMEfficiency (2·params FLOPs per
//     token): the shape of Vidur's kernel timings, flat while the read
//     dominates, then linear in the step's tokens. With GEMMOverlap p > 1
//     the read (plus a latency per GEMM) and the arithmetic overlap as
//     (read^p + arith^p)^(1/p), each group of GEMMs on its own rows, as
//     cuBLAS on a measured H200. Each class of weights reads and
//     multiplies in its format (FP8 on FP8 tensor cores). A mixture of
//     experts' routed experts are a group of their own (moe.go): the
//     weights of the experts the step's tokens reach, a grouped GEMM of
//     few tokens an expert. The input embedding is a row lookup and not
//     read;
//   - attention (attention.go) reads every decoding sequence's KV (at
//     KVReadFactor); a prefill chunk's attention takes the slower of its
//     QK/AV arithmetic (causal within the chunk at AttentionEfficiency,
//     against its cached context at ContextAttentionEfficiency; MLA's
//     lift of the cached latents to heads at GEMMEfficiency) and its
//     reads; the new KV is written. Sliding-window and chunked layers see
//     their window or chunk of keys;
//   - elementwise kernels stream the hidden vectors (and the routed
//     tokens' gathered copies);
//   - tensor parallelism adds two all-reduces per layer, expert
//     parallelism over data-parallel ranks an exchange of tokens per MoE
//     layer; fixed overheads (and each MoE layer's routing kernels).
func (cm *Model) Step(seqs []Seq) Cost {
	var c Cost
	m, hw, cal := &cm.Model, &cm.HW, &cm.HW.Calib
	tp := float64(max(1, cm.TP))
	shape := cm.attnShape()
	var aw attnWork
	tokens := 0
	for i := range seqs {
		s := &seqs[i]
		n := s.Tokens
		if n <= 0 {
			continue
		}
		c.Seqs++
		tokens += n
		if s.Sample {
			c.Sampled++
		}
		decode := n == 1 && s.Pos >= s.NumPrompt
		if decode {
			c.DecodeTokens++
		} else {
			c.PrefillTokens += n
		}
		shape.add(&aw, s, decode)
	}
	if tokens == 0 {
		return Cost{}
	}
	causalFLOPs, contextFLOPs, decodeFLOPs := aw.causal, aw.context, aw.decode
	kvReadPrefill, kvReadDecode, kvWrite := aw.readPrefill, aw.readDecode, aw.write
	attnFLOPs := (causalFLOPs + contextFLOPs + decodeFLOPs + aw.lift) / tp

	ex := cm.experts(tokens)
	g := cm.gemms(tokens, c.Sampled, ex)
	c.GEMM, c.memoryBound = g.time, g.memoryBound
	c.FLOPs = g.flops + attnFLOPs
	// The KV terms are already per GPU, so they are not divided by tp again.
	c.ReadBytes = g.bytes + kvReadPrefill + kvReadDecode
	c.WriteBytes = kvWrite

	bw := hw.MemBandwidth
	c.WeightRead, c.DecodeKVRead = seconds(g.bytes/bw), seconds(kvReadDecode/bw)
	attnPeak := hw.PeakFLOPs * cmp.Or(cal.AttentionEfficiency, cal.GEMMEfficiency)
	ctxPeak := hw.PeakFLOPs * cmp.Or(cal.ContextAttentionEfficiency, cal.AttentionEfficiency, cal.GEMMEfficiency)
	decodeAttn := seconds(kvReadDecode * cal.KVReadFactor / bw)
	// Decode attention is priced by its read; its arithmetic (small beside
	// it) joins the chunks'.
	prefillAttn := seconds(max((causalFLOPs+decodeFLOPs)/tp/attnPeak+contextFLOPs/tp/ctxPeak+aw.lift/tp/(hw.PeakFLOPs*cal.GEMMEfficiency),
		kvReadPrefill/bw))
	c.Attention = decodeAttn + prefillAttn + seconds(kvWrite/bw)
	// Norms, RoPE, the activation function and residual adds stream the
	// tokens' hidden vectors through memory, on every rank.
	elementwise := cal.ActivationPasses * float64(m.Layers) * float64(tokens) * float64(m.Hidden) * m.BytesPerParam
	if ex != nil {
		elementwise += ex.activations
	}
	c.Elementwise = seconds(elementwise / bw)

	if cm.TP > 1 {
		// Row-parallel attention output and MLP down projections each end
		// in an all-reduce of tokens × hidden activations; a ring moves
		// 2·(tp−1)/tp of the buffer through each GPU's link. Under expert
		// parallelism across data-parallel ranks, the MoE layers' exchange
		// takes the place of their MLP's.
		size := float64(tokens) * float64(m.Hidden) * m.BytesPerParam
		per := cal.AllReduceLatency.Seconds() + 2*(tp-1)/tp*size/hw.InterconnectBandwidth
		n := 2 * float64(m.Layers)
		if ex != nil && ex.exchange > 0 {
			n -= float64(m.MoE.Layers)
		}
		c.AllReduce = seconds(n * per)
	}
	c.Overhead = cal.StepOverhead +
		time.Duration(m.Layers)*cal.LayerOverhead +
		time.Duration(c.Seqs)*cal.RequestOverhead
	if ex != nil {
		routing := time.Duration(m.MoE.Layers) * moeTerms(cal.MoE).LayerOverhead
		c.Overhead += routing
		c.AllToAll = seconds(ex.exchange)
		c.MoE = MoECost{Touched: ex.touched, PerGPU: ex.local, TokensPerExpert: ex.perExpert, Imbalance: ex.imbalance,
			GEMM: g.experts, Routing: routing, WeightBytes: ex.group.bytes, FLOPs: ex.group.flops}
	}
	c.Duration = c.GEMM + c.Attention + c.Elementwise + c.AllReduce + c.AllToAll + c.Overhead
	c.Host = cal.HostStepOverhead + time.Duration(c.Seqs)*cal.HostSeqOverhead
	c.Activity = cm.activity(&c, &g, decodeAttn, prefillAttn, elementwise, decodeFLOPs/tp, (causalFLOPs+contextFLOPs)/tp)
	return c
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
