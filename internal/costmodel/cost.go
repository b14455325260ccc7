// Package costmodel prices a step of an LLM server on simulated GPUs: a
// roofline of each kernel family (GEMMs, attention, elementwise kernels,
// all-reduces) from a hardware and a model profile, times the hardware's
// calibrated coefficients, plus fixed overheads (cost.go); what the GPU's
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
	"math"
	"time"

	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// Model prices one engine step on TP GPUs of HW running Model with the
// coefficients of HW.Calib; see Step.
type Model struct {
	HW    profiles.Hardware
	Model profiles.Model
	TP    int // tensor-parallel degree, >= 1
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
	Overhead                 time.Duration // per step, layer and sequence
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

// MemoryBound reports whether the weight read, not the arithmetic, set the
// GEMMs' time.
func (c *Cost) MemoryBound() bool { return c.memoryBound }

// Step prices a step's sequences as the sum of its kernel families, which run one
// after another:
//   - the GEMMs (projections, MLP, and the LM head on the sampled rows):
//     with the additive profile (GEMMOverlap ≤ 1) the slower of the weight
//     read at the calibrated efficiency and the ideal weight read plus the
//     arithmetic at GEMMEfficiency (2·params FLOPs per token): the shape of
//     Vidur's kernel timings, flat while the read dominates, then linear
//     in the step's tokens. With GEMMOverlap p > 1 the read (plus a latency
//     per GEMM) and the arithmetic overlap as (read^p + arith^p)^(1/p), the
//     layers' GEMMs and the LM head's each on their own rows, as cuBLAS on
//     a measured H200. The input embedding is a row lookup and not read;
//   - attention reads every decoding sequence's KV (at KVReadFactor); a
//     prefill chunk's attention takes the slower of its QK/AV arithmetic
//     (causal within the chunk at AttentionEfficiency, against its cached
//     context at ContextAttentionEfficiency) and its reads; the new KV is
//     written;
//   - elementwise kernels stream the hidden vectors;
//   - tensor parallelism adds two all-reduces per layer; fixed overheads.
func (cm *Model) Step(seqs []Seq) Cost {
	var c Cost
	m, hw, cal := &cm.Model, &cm.HW, &cm.HW.Calib
	tp := float64(max(1, cm.TP))
	kvTok := float64(m.KVBytesPerToken(cm.TP))
	// FLOPs of one query attending to one key across all layers and heads:
	// QKᵀ and AV are each 2·head_dim multiply-adds per head.
	attnPair := 4 * float64(m.Layers) * float64(m.Heads) * float64(m.HeadDim)

	var causalFLOPs, contextFLOPs, decodeFLOPs, kvReadPrefill, kvReadDecode, kvWrite float64
	tokens := 0
	for i := range seqs {
		s := &seqs[i]
		n := s.Tokens
		if n <= 0 {
			continue
		}
		c.Seqs++
		tokens += n
		nn, pos := float64(n), float64(s.Pos)
		if s.Sample {
			c.Sampled++
		}
		read := (pos + nn) * kvTok
		kvWrite += nn * kvTok
		if n == 1 && s.Pos >= s.NumPrompt {
			c.DecodeTokens++
			kvReadDecode += read
			decodeFLOPs += attnPair * (pos + 1)
		} else {
			// Token i (0-based) of the chunk sees pos+i+1 keys: pos of the
			// cached context, i+1 of its own.
			c.PrefillTokens += n
			kvReadPrefill += read
			causalFLOPs += attnPair * nn * (nn + 1) / 2
			contextFLOPs += attnPair * nn * pos
		}
	}
	if tokens == 0 {
		return Cost{}
	}
	attnFLOPs := (causalFLOPs + contextFLOPs + decodeFLOPs) / tp

	g := cm.gemms(tokens, c.Sampled)
	c.GEMM, c.memoryBound = g.time, g.memoryBound
	c.FLOPs = g.flops + attnFLOPs
	// kvTok is already per GPU, so the KV terms are not divided by tp again.
	c.ReadBytes = g.bytes + kvReadPrefill + kvReadDecode
	c.WriteBytes = kvWrite

	bw := hw.MemBandwidth
	c.WeightRead, c.DecodeKVRead = seconds(g.bytes/bw), seconds(kvReadDecode/bw)
	attnPeak := hw.PeakFLOPs * cmp.Or(cal.AttentionEfficiency, cal.GEMMEfficiency)
	ctxPeak := hw.PeakFLOPs * cmp.Or(cal.ContextAttentionEfficiency, cal.AttentionEfficiency, cal.GEMMEfficiency)
	decodeAttn := seconds(kvReadDecode * cal.KVReadFactor / bw)
	// Decode attention is priced by its read; its arithmetic (small beside
	// it) joins the chunks'.
	prefillAttn := seconds(max((causalFLOPs+decodeFLOPs)/tp/attnPeak+contextFLOPs/tp/ctxPeak, kvReadPrefill/bw))
	c.Attention = decodeAttn + prefillAttn + seconds(kvWrite/bw)
	// Norms, RoPE, the activation function and residual adds stream the
	// tokens' hidden vectors through memory, on every rank.
	elementwise := cal.ActivationPasses * float64(m.Layers) * float64(tokens) * float64(m.Hidden) * m.BytesPerParam
	c.Elementwise = seconds(elementwise / bw)

	if cm.TP > 1 {
		// Row-parallel attention output and MLP down projections each end
		// in an all-reduce of tokens × hidden activations; a ring moves
		// 2·(tp−1)/tp of the buffer through each GPU's link.
		size := float64(tokens) * float64(m.Hidden) * m.BytesPerParam
		per := cal.AllReduceLatency.Seconds() + 2*(tp-1)/tp*size/hw.InterconnectBandwidth
		c.AllReduce = seconds(2 * float64(m.Layers) * per)
	}
	c.Overhead = cal.StepOverhead +
		time.Duration(m.Layers)*cal.LayerOverhead +
		time.Duration(c.Seqs)*cal.RequestOverhead
	c.Duration = c.GEMM + c.Attention + c.Elementwise + c.AllReduce + c.Overhead
	c.Host = cal.HostStepOverhead + time.Duration(c.Seqs)*cal.HostSeqOverhead
	c.Activity = cm.activity(&c, &g, decodeAttn, prefillAttn, elementwise, decodeFLOPs/tp, (causalFLOPs+contextFLOPs)/tp)
	return c
}

// gemmWork is a step's GEMMs: their time, work and traffic per GPU, and
// the shares of the time that stream weights and that compute.
type gemmWork struct {
	time        time.Duration
	memoryBound bool
	flops       float64 // per GPU
	bytes       float64 // weights read, per GPU
	compute     float64 // of time, the arithmetic-bound share
	tensor      float64 // seconds the tensor pipe counts busy
}

// gemms prices the step's GEMMs: the layers' on every token, the LM
// head's on the sampled rows.
func (cm *Model) gemms(tokens, sampled int) gemmWork {
	m, hw, cal := &cm.Model, &cm.HW, &cm.HW.Calib
	tp := float64(max(1, cm.TP))
	layerParams, headParams := m.MatmulParams()/tp, 0.0
	if sampled > 0 {
		headParams = m.HeadParams() / tp
	}
	raw, eff, wlf, lat := hw.PeakFLOPs, cal.GEMMEfficiency, cal.WeightLoadFactor, cal.GEMMKernelLatency.Seconds()
	layerBytes := layerParams * m.BytesPerParam
	if m.FP8 {
		f := cal.FP8
		raw, eff, wlf, lat = hw.PeakFP8FLOPs, f.GEMMEfficiency, f.WeightLoadFactor, f.GEMMKernelLatency.Seconds()
		layerBytes = layerParams // one byte a weight; the LM head stays BF16, as vLLM's fp8 leaves it
	}
	peak := raw * eff
	headBytes := headParams * m.BytesPerParam
	bw := hw.MemBandwidth
	layerFLOPs, headFLOPs := 2*layerParams*float64(tokens), 2*headParams*float64(sampled)
	w := gemmWork{flops: layerFLOPs + headFLOPs, bytes: layerBytes + headBytes}
	// The tensor pipe's busy time: padded tiles at the peak rate.
	tc := &cal.Counters
	w.tensor = layerFLOPs*tc.TensorFactor(float64(tokens))/raw + headFLOPs*tc.TensorFactor(float64(sampled))/hw.PeakFLOPs
	if p := cal.GEMMOverlap; p > 1 {
		// Each GEMM's read (with its latency) and arithmetic overlap; the
		// layers' and the LM head's are on different rows.
		var t, comp float64
		for _, g := range []struct{ bytes, flops, peak, wlf, lat, kernels float64 }{
			{layerBytes, layerFLOPs, peak, wlf, lat, 4 * float64(m.Layers)},
			{headBytes, headFLOPs, hw.PeakFLOPs * cal.GEMMEfficiency, cal.WeightLoadFactor, cal.GEMMKernelLatency.Seconds(), 1},
		} {
			if g.bytes == 0 {
				continue
			}
			read := g.bytes*g.wlf/bw + g.kernels*g.lat
			arith := g.flops / g.peak
			rp, ap := math.Pow(read, p), math.Pow(arith, p)
			gt := math.Pow(rp+ap, 1/p)
			t += gt
			comp += gt * ap / (rp + ap)
		}
		w.time, w.compute = seconds(t), comp/t
		w.memoryBound = w.compute < 0.5
		return w
	}
	// The LM head runs at the BF16 rate also when the layers are FP8.
	compute := layerFLOPs/peak + headFLOPs/(hw.PeakFLOPs*cal.GEMMEfficiency)
	read := w.bytes * wlf / bw
	arith := w.bytes/bw + compute
	w.time, w.memoryBound = seconds(max(read, arith)), read >= arith
	if !w.memoryBound {
		w.compute = compute / arith
	}
	return w
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
