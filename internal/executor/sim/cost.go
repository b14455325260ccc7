package sim

import (
	"fmt"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// CostModel prices one engine step on TP GPUs of HW running Model with the
// coefficients of HW.Calib; see Step.
type CostModel struct {
	HW    Hardware
	Model Model
	TP    int // tensor-parallel degree, >= 1
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

// Step prices a batch as the sum of its kernel families, which run one
// after another:
//   - the GEMMs (projections, MLP, and the LM head when a sequence samples)
//     take the slower of the weight read at the calibrated efficiency and
//     the ideal weight read plus the arithmetic at GEMMEfficiency (2·params
//     FLOPs per token). That is the shape of Vidur's kernel timings: flat
//     while the read dominates, then linear in the step's tokens, so the
//     achieved MFU rises with them (0.40 at 256 tokens, 0.78 at 2048 on
//     H100); the input embedding is a row lookup and not read;
//   - attention reads every decoding sequence's KV (at KVReadFactor); a
//     prefill chunk's attention takes the slower of its QK/AV arithmetic
//     and its reads, and the new KV is written;
//   - elementwise kernels stream the hidden vectors;
//   - tensor parallelism adds two all-reduces per layer; fixed overheads.
func (cm *CostModel) Step(b *engine.Batch) Cost {
	var c Cost
	m, hw, cal := &cm.Model, &cm.HW, &cm.HW.Calib
	tp := float64(max(1, cm.TP))
	kvTok := float64(m.KVBytesPerToken(cm.TP))
	// FLOPs of one query attending to one key across all layers and heads:
	// QKᵀ and AV are each 2·head_dim multiply-adds per head.
	attnPair := 4 * float64(m.Layers) * float64(m.Heads) * float64(m.HeadDim)

	var attnFLOPs, kvReadPrefill, kvReadDecode, kvWrite float64
	tokens := 0
	for i := range b.Seqs {
		s := &b.Seqs[i]
		n := len(s.Tokens)
		if n == 0 {
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
			attnFLOPs += attnPair * (pos + 1)
		} else {
			// Token i (0-based) of the chunk sees pos+i+1 keys.
			c.PrefillTokens += n
			kvReadPrefill += read
			attnFLOPs += attnPair * (nn*pos + nn*(nn+1)/2)
		}
	}
	if tokens == 0 {
		return Cost{}
	}

	params := m.MatmulParams() * float64(tokens)
	weights := m.MatmulParams()
	if c.Sampled > 0 {
		params += m.HeadParams() * float64(c.Sampled)
		weights += m.HeadParams()
	}
	weights *= m.BytesPerParam / tp
	gemmFLOPs := 2 * params / tp
	attnFLOPs /= tp
	c.FLOPs = gemmFLOPs + attnFLOPs
	// kvTok is already per GPU, so the KV terms are not divided by tp again.
	c.ReadBytes = weights + kvReadPrefill + kvReadDecode
	c.WriteBytes = kvWrite

	peak, bw := hw.PeakFLOPs*cal.GEMMEfficiency, hw.MemBandwidth
	c.WeightRead, c.DecodeKVRead = seconds(weights/bw), seconds(kvReadDecode/bw)
	read := weights * cal.WeightLoadFactor / bw
	arith := weights/bw + gemmFLOPs/peak
	c.GEMM, c.memoryBound = seconds(max(read, arith)), read >= arith
	c.Attention = seconds(kvReadDecode*cal.KVReadFactor/bw + max(attnFLOPs/peak, kvReadPrefill/bw) + kvWrite/bw)
	// Norms, RoPE, the activation function and residual adds stream the
	// tokens' hidden vectors through memory, on every rank.
	c.Elementwise = seconds(cal.ActivationPasses * float64(m.Layers) * float64(tokens) * float64(m.Hidden) * m.BytesPerParam / bw)

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
	return c
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// KVCacheBytes is the KV cache memory per GPU: override when positive (as
// vLLM's --kv-cache-memory-bytes), else gpuMemoryUtilization of device
// memory minus this GPU's share of the weights and the activation reserve.
func KVCacheBytes(hw Hardware, m Model, tp int, gpuMemoryUtilization float64, override int64) (int64, error) {
	if err := m.CheckTP(tp); err != nil {
		return 0, fmt.Errorf("size kv cache: %w", err)
	}
	switch {
	case override < 0:
		return 0, fmt.Errorf("size kv cache: --kv-cache-memory-bytes must not be negative, got %d", override)
	case override > 0:
		return override, nil
	case !(gpuMemoryUtilization > 0 && gpuMemoryUtilization <= 1):
		return 0, fmt.Errorf("size kv cache: --gpu-memory-utilization must be in (0, 1], got %v", gpuMemoryUtilization)
	}
	budget := gpuMemoryUtilization * hw.MemoryBytes
	weights := m.WeightBytes() / float64(tp)
	reserve := hw.Calib.ActivationReserveBytes
	kv := budget - weights - reserve
	if kv <= 0 {
		return 0, fmt.Errorf("size kv cache: %s on %d× %s leaves no memory for the KV cache "+
			"(%.2f × %.1f GB − %.1f GB of weights per GPU − %.1f GB activation reserve = %.1f GB): "+
			"raise --gpu-memory-utilization or --tensor-parallel-size, or set --kv-cache-memory-bytes",
			m.Name, tp, hw.Name, gpuMemoryUtilization, hw.MemoryBytes/1e9, weights/1e9, reserve/1e9, kv/1e9)
	}
	return int64(kv), nil
}

// KVBlocks is how many blocks of blockSize tokens fit in kvBytes per GPU.
func KVBlocks(kvBytes int64, m Model, tp, blockSize int) int {
	if blockSize < 1 {
		return 0
	}
	return int(kvBytes / (int64(blockSize) * m.KVBytesPerToken(tp)))
}
