package costmodel

import (
	"fmt"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// SetDtypes applies vLLM's --quantization and --kv-cache-dtype to the
// model profile m on hw, refusing by name what the cost model cannot
// price: FP8 weights need the hardware's measured FP8 GEMMs; K/V is kept
// in the model's dtype or in one byte an element.
func SetDtypes(hw *profiles.Hardware, m *profiles.Model, quantization, kvDtype string) error {
	switch q := strings.ToLower(quantization); {
	case q == "" || q == m.Quantization: // the checkpoint's own formats
	case m.Quantization != "":
		return fmt.Errorf("--quantization %s: %s's checkpoint is quantized with %s (its config.json's quantization_config), and vLLM refuses another method",
			quantization, m.Name, m.Quantization)
	case q == "fp8":
		if hw.PeakFP8FLOPs <= 0 || hw.Calib.FP8 == nil {
			return fmt.Errorf("--quantization fp8: the simulated %s has no FP8 GEMMs measured (profiles with them: %s)",
				hw.Name, strings.Join(fp8Hardware(), ", "))
		}
		m.FP8 = true
	default:
		return fmt.Errorf("--quantization %s: the simulator prices bf16 and fp8 weights only (and a checkpoint's own formats)", quantization)
	}
	if w := m.Weights; (w.Attention.FP8 || w.MLP.FP8 || w.Experts.FP8) && hw.PeakFP8FLOPs > 0 && hw.Calib.FP8 == nil {
		// vLLM runs a W8A8 checkpoint on the GPU's FP8 tensor cores (on a
		// GPU without them, Marlin widens it: priced as weight-only).
		return fmt.Errorf("%s's checkpoint (%s) runs its GEMMs on FP8 tensor cores, and the simulated %s has no FP8 GEMMs measured (profiles with them: %s)",
			m.Name, m.Quantization, hw.Name, strings.Join(fp8Hardware(), ", "))
	}
	switch strings.ToLower(kvDtype) {
	case "", "auto":
	case "fp8", "fp8_e4m3", "fp8_e5m2":
		m.KVBytes = 1
	default:
		return fmt.Errorf("--kv-cache-dtype %s: the simulated GPU keeps KV in the model's dtype (auto) or in fp8 (fp8, fp8_e4m3, fp8_e5m2)", kvDtype)
	}
	return nil
}

// fp8Hardware lists the profiles with FP8 GEMM terms.
func fp8Hardware() []string {
	var out []string
	for _, n := range profiles.HardwareNames() {
		if h, err := profiles.LookupHardware(n); err == nil && h.PeakFP8FLOPs > 0 && h.Calib.FP8 != nil {
			out = append(out, n)
		}
	}
	return out
}

// KVCacheBytes is the KV cache memory per GPU: override when positive (as
// vLLM's --kv-cache-memory-bytes), else gpuMemoryUtilization of device
// memory minus this GPU's share of the weights and the activation reserve.
func KVCacheBytes(hw profiles.Hardware, m profiles.Model, tp int, gpuMemoryUtilization float64, override int64) (int64, error) {
	return kvCacheBytes(hw, m, tp, tp, gpuMemoryUtilization, override)
}

// CacheBytes is KVCacheBytes of this deployment, expert parallelism's
// placement of the experts included.
func (cm *Model) CacheBytes(gpuMemoryUtilization float64, override int64) (int64, error) {
	return kvCacheBytes(cm.HW, cm.Model, max(1, cm.TP), max(1, cm.TP, cm.EP), gpuMemoryUtilization, override)
}

// WeightBytesPerGPU is one GPU's share of the weights over tp GPUs, the
// routed experts over ep (≥ tp): what tensor parallelism splits divided,
// what every GPU keeps whole (MLA's down projections, the routers) not.
// Every expert counts, touched or not: vLLM loads them all.
func WeightBytesPerGPU(m *profiles.Model, tp, ep int) float64 {
	routed := m.RoutedParams() * m.Format(m.Weights.Experts).Bytes
	whole := m.ReplicatedAttention*m.Format(m.Weights.Attention).Bytes + m.ReplicatedMLP*m.Format(m.Weights.MLP).Bytes
	return (m.WeightBytes()-routed-whole)/float64(tp) + whole + routed/float64(max(tp, ep))
}

func kvCacheBytes(hw profiles.Hardware, m profiles.Model, tp, ep int, gpuMemoryUtilization float64, override int64) (int64, error) {
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
	weights := WeightBytesPerGPU(&m, tp, ep)
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
func KVBlocks(kvBytes int64, m profiles.Model, tp, blockSize int) int {
	if blockSize < 1 {
		return 0
	}
	return int(kvBytes / (int64(blockSize) * m.KVBytesPerToken(tp)))
}

// HostKV sizes vLLM's CPU KV offload tier of size bytes of host memory
// (--kv-offloading-size, which vLLM sums over the tensor-parallel ranks):
// the blocks of blockSize tokens it holds, one block's bytes over every
// GPU (what a transfer of it moves), and the host link's bandwidth over
// every GPU (each copies its share of a block at once over its own PCIe
// link, HostLink).
func HostKV(hw profiles.Hardware, m profiles.Model, tp, blockSize int, size float64) (blocks int, blockBytes int64, bandwidth float64) {
	tp = max(tp, 1)
	blockBytes = int64(blockSize) * m.KVBytesPerToken(tp) * int64(tp)
	if blockBytes <= 0 || !(size > 0) {
		return 0, blockBytes, 0
	}
	return int(size / float64(blockBytes)), blockBytes, HostLink(&hw) * float64(tp)
}

// HostLink is one GPU's host-to-device (and device-to-host) copy rate:
// PCIe Gen5 x16 on Hopper, Gen4 x16 before, at about 85% of the link's 64
// or 32 GB/s, what pinned-memory copies reach.
func HostLink(hw *profiles.Hardware) float64 { return hostLink(hw) }
