package sim

import (
	"fmt"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// CostModel prices one engine step on TP GPUs of HW running Model. It is a
// roofline (the slower of compute and memory traffic) scaled by HW.Calib,
// plus tensor-parallel all-reduce time and fixed overheads; see Step.
type CostModel struct {
	HW    Hardware
	Model Model
	TP    int // tensor-parallel degree, >= 1
}

// Cost is the price of one step. Times are on the simulated GPU; the work
// estimates are per GPU and uncalibrated, as vLLM's
// vllm:estimated_{flops,read_bytes,write_bytes}_per_gpu_total count them.
type Cost struct {
	Duration time.Duration // max(Compute, Memory) + AllReduce + Overhead

	Compute   time.Duration // FLOPs / (peak × MFU)
	Memory    time.Duration // calibrated bytes / bandwidth
	AllReduce time.Duration // tensor-parallel communication
	Overhead  time.Duration // per step, layer, request and output token
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
}

// MemoryBound reports whether memory traffic, not arithmetic, set the
// roofline term.
func (c *Cost) MemoryBound() bool { return c.Memory >= c.Compute }

// KVHeadsPerGPU is how many KV heads each GPU stores: vLLM splits them
// across TP ranks and replicates them when there are fewer heads than ranks.
func (m *Model) KVHeadsPerGPU(tp int) int { return max(1, m.KVHeads/max(1, tp)) }

// KVBytesPerToken is the KV cache one token takes on each GPU: K and V, for
// every layer and local KV head, in the model's dtype.
func (m *Model) KVBytesPerToken(tp int) int64 {
	return int64(2 * m.Layers * m.KVHeadsPerGPU(tp) * m.HeadDim * int(m.BytesPerParam))
}

// CheckTP reports whether the model can be split tp ways, with vLLM's rules:
// attention heads divide evenly, and KV heads either divide evenly or are
// replicated a whole number of times.
func (m *Model) CheckTP(tp int) error {
	switch {
	case tp < 1:
		return fmt.Errorf("check tensor parallel size: must be at least 1, got %d", tp)
	case m.Heads%tp != 0:
		return fmt.Errorf("check tensor parallel size: %s has %d attention heads, not divisible by --tensor-parallel-size %d",
			m.Name, m.Heads, tp)
	case m.KVHeads%tp != 0 && tp%m.KVHeads != 0:
		return fmt.Errorf("check tensor parallel size: %s has %d KV heads, which cannot be split or replicated over %d GPUs",
			m.Name, m.KVHeads, tp)
	}
	return nil
}

// matmulParams is the parameters that multiply every token: all but the
// input embedding, which is a row lookup, and the LM head, which only runs
// for sampled positions (vLLM computes logits at those alone).
func (m *Model) matmulParams() float64 {
	head := float64(m.Vocab) * float64(m.Hidden)
	p := m.Params - head
	if !m.TiedEmbedding {
		p -= head
	}
	return p
}

// Step prices a batch. Compute is 2·params FLOPs per token plus attention's
// QK and AV products over each token's causal context, split by phase so
// that prefill work runs at MFUPrefill and decode work at MFUDecode (a mixed
// step blends by FLOP share). Memory is the weights once per step, every
// sequence's KV read and the new KV written, with the calibrated
// inefficiency factors. Tensor parallelism divides both and adds two ring
// all-reduces of the activations per layer.
func (cm *CostModel) Step(b *engine.Batch) Cost {
	var c Cost
	m, hw, cal := &cm.Model, &cm.HW, &cm.HW.Calib
	tp := float64(max(1, cm.TP))
	kvTok := float64(m.KVBytesPerToken(cm.TP))
	// FLOPs of one query attending to one key across all layers and heads:
	// QKᵀ and AV are each 2·head_dim multiply-adds per head.
	attnPair := 4 * float64(m.Layers) * float64(m.Heads) * float64(m.HeadDim)
	linear := 2 * m.matmulParams()
	head := 2 * float64(m.Vocab) * float64(m.Hidden)

	var flopsPrefill, flopsDecode, kvReadPrefill, kvReadDecode, kvWrite float64
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
		// Token i (0-based) sees pos+i+1 keys.
		f := linear*nn + attnPair*(nn*pos+nn*(nn+1)/2)
		if s.Sample {
			f += head
			c.Sampled++
		}
		read := (pos + nn) * kvTok
		kvWrite += nn * kvTok
		if n == 1 && s.Pos >= s.NumPrompt {
			c.DecodeTokens++
			flopsDecode += f
			kvReadDecode += read
		} else {
			c.PrefillTokens += n
			flopsPrefill += f
			kvReadPrefill += read
		}
	}
	if tokens == 0 {
		return Cost{}
	}

	weights := m.WeightBytes() / tp
	c.FLOPs = (flopsPrefill + flopsDecode) / tp
	compute := (flopsPrefill/cal.MFUPrefill + flopsDecode/cal.MFUDecode) / (tp * hw.PeakFLOPs)
	// kvTok is already per GPU, so the KV terms are not divided by tp again.
	c.ReadBytes = weights + kvReadPrefill + kvReadDecode
	c.WriteBytes = kvWrite
	memory := (weights*cal.WeightLoadFactor + kvReadPrefill + kvReadDecode*cal.KVReadFactor + kvWrite) /
		hw.MemBandwidth
	c.Compute, c.Memory = seconds(compute), seconds(memory)

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
		time.Duration(c.Seqs)*cal.RequestOverhead +
		time.Duration(c.Sampled)*cal.OutputTokenOverhead
	c.Duration = max(c.Compute, c.Memory) + c.AllReduce + c.Overhead
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
