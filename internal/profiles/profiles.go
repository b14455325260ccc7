// Package profiles is the data table of the GPUs and models glassbox knows:
// datasheet peaks, what NVIDIA's tools report of each GPU, the cost model's
// fitted coefficients (profiles.go, h200.go), and transformer shapes read
// from Hugging Face config.json files, dense or mixtures of experts, GQA or
// MLA, with their checkpoints' weight formats (model.go, hfconfig.go,
// hfmoe.go, hfquant.go; the built-in models are such files: builtin.go).
// The simulator prices steps with it, the doctor reads a vLLM target's peak
// FLOP/s and bandwidth from it, and the planner searches it. It imports
// nothing of glassbox's.
package profiles

import (
	"fmt"
	"strings"
	"time"
)

// Hardware is one GPU model as the cost model sees it: datasheet peaks plus
// the calibration that turns peaks into achieved speed.
type Hardware struct {
	Name string

	PeakFLOPs    float64 // dense BF16 FLOP/s per GPU (not the "with sparsity" figure)
	PeakFP8FLOPs float64 // dense FP8 FLOP/s per GPU; 0 where the GPU has no FP8 tensor cores
	MemBandwidth float64 // HBM (or GDDR) bytes/s per GPU
	MemoryBytes  float64 // device memory per GPU, in datasheet (decimal) bytes

	// InterconnectBandwidth is the one-direction bytes/s a GPU can push to
	// its ring neighbour during an all-reduce (NVLink total / 2, or PCIe
	// one-way). Interconnect names the link, for humans.
	InterconnectBandwidth float64
	Interconnect          string

	Device Device
	Calib  Calibration
}

// Device is what NVIDIA's tools report of the GPU (nvidia-smi, DCGM), for
// the simulated dcgm-exporter: the marketing name, the framebuffer the
// driver shows, power and clocks. From NVIDIA's datasheets and typical
// nvidia-smi readings of each part; the sim's KV sizing keeps using
// MemoryBytes.
type Device struct {
	ModelName      string  // DCGM's modelName label
	FramebufferMiB int     // DCGM_FI_DEV_FB_FREE + _USED + _RESERVED
	ReservedMiB    int     // kept by the driver (DCGM_FI_DEV_FB_RESERVED)
	TDPWatts       float64 // board power limit
	SMClockMHz     int     // boost clock under load
	IdleSMClockMHz int
	MemClockMHz    int
	HBM            bool // memory temperature is reported (GDDR parts report 0)
}

// Calibration holds every fitted coefficient of the cost model for one
// hardware profile, so that `glassbox simulate calibrate` can replace the
// whole table from measurements. Where a value comes from is said beside it:
// Vidur's kernel profiles (reference/calibration/README.md §B), BLIS's
// trained-physics fit (§D), or a fit of glassbox's own to §A.
type Calibration struct {
	// GEMMEfficiency is the fraction of PeakFLOPs the GEMMs' arithmetic
	// runs at once the weights are read, and WeightLoadFactor how much
	// slower than the bandwidth bound their weight read is: fitted to
	// Vidur's per-layer timings (H100 Llama-2-7B: 0.795 and 1.33; A100
	// Llama-3-8B: 0.75 and 1.36; median error 4 % and 3 % over 1–8192
	// tokens). The achieved MFU then rises with the step's tokens, as
	// measured, where one MFU constant could not fit 256 tokens and 2048.
	GEMMEfficiency   float64
	WeightLoadFactor float64
	// KVReadFactor is the decode attention's KV read against the bandwidth
	// bound (BLIS's β: 1.9).
	KVReadFactor float64
	// ActivationPasses is the elementwise kernels' traffic (norms, RoPE,
	// the activation function, residual adds) per token and layer, in
	// hidden-size bf16 vectors: 38 on Vidur's H100, 43 on its A100.
	ActivationPasses float64

	// Fixed launch and CPU overheads per step, per layer and per sequence
	// in the batch (BLIS's trained-physics β7, β5 and β6 to start with).
	StepOverhead    time.Duration
	LayerOverhead   time.Duration
	RequestOverhead time.Duration

	// HostStepOverhead and HostSeqOverhead are host work per step and per
	// scheduled sequence that does not overlap the GPU (scheduling, input
	// preparation, output processing): the GPU idles through it.
	HostStepOverhead time.Duration
	HostSeqOverhead  time.Duration

	// AllReduceLatency is the fixed cost of one all-reduce, which dominates
	// the tiny all-reduces of decode steps. Not from the anchors: NCCL and
	// vLLM's custom all-reduce take a few microseconds per call on NVLink.
	AllReduceLatency time.Duration

	// ActivationReserveBytes is memory per GPU kept back from the KV cache
	// for activations, CUDA graphs and the non-torch allocations that vLLM's
	// memory profiling subtracts (typically 1–3 GiB for 7–70B models).
	ActivationReserveBytes float64

	// Frontend is vLLM's API server around the engine, which no GPU step
	// pays for; glassbox simulate adds it to what clients see.
	Frontend Frontend

	// GEMMOverlap is how the GEMMs' weight read and arithmetic combine.
	// At 1 (or 0) they add: the GEMMs take the slower of the weight read
	// at WeightLoadFactor and the ideal read plus the arithmetic (the
	// shape of Vidur's H100 kernel timings). Above 1 they overlap as an
	// L^p norm, (read^p + arith^p)^(1/p), the read at WeightLoadFactor
	// plus GEMMKernelLatency per GEMM: cuBLAS on a measured H200, where
	// 128 tokens take 1.15× the read, not the 2× a sum would say.
	GEMMOverlap       float64
	GEMMKernelLatency time.Duration
	// AttentionEfficiency is the share of PeakFLOPs a prefill chunk's
	// causal attention runs at, ContextAttentionEfficiency the share its
	// attention to the cached tokens before it runs at; 0 takes
	// GEMMEfficiency (and AttentionEfficiency).
	AttentionEfficiency        float64
	ContextAttentionEfficiency float64
	// FP8 is the GEMMs' terms with FP8 (e4m3) weights, as vLLM's
	// --quantization fp8 runs them; nil where no FP8 GEMM was measured.
	FP8 *FP8Calibration
	// MoE is how a mixture of experts' routed experts run.
	MoE MoECalibration

	// Counters relate a step's work to what the GPU's own activity
	// counters (DCGM's profiling fields) read while it runs.
	Counters Counters
}

// FP8Calibration is the GEMM terms of FP8 weights: GEMMEfficiency is a
// share of Hardware.PeakFP8FLOPs; the read and latency are as BF16's.
type FP8Calibration struct {
	GEMMEfficiency    float64
	WeightLoadFactor  float64
	GEMMKernelLatency time.Duration
}

// MoECalibration is the terms of a mixture of experts' routed experts
// beyond a dense GEMM's (costmodel/moe.go). Stated, not fitted: no MoE
// kernel was timed here; table A′'s MoE runs check them end to end.
type MoECalibration struct {
	// GEMMEfficiency is the grouped GEMM's arithmetic rate over a dense
	// GEMM's. 1: with many tokens an expert, vLLM's fused MoE kernel is
	// one dense GEMM an expert (its tuned tiles); what it loses with few
	// tokens an expert is the tiles' padding, priced on its own.
	GEMMEfficiency float64 `yaml:"gemm_efficiency"`
	// ReadFactor is the experts' weight read over a dense GEMM's at the
	// same bytes. 1: each touched expert's weights stream once, as a
	// dense GEMM's do.
	ReadFactor float64 `yaml:"read_factor"`
	// Imbalance is the most popular expert's share of the routed tokens
	// over the mean (1: uniform routing), at most 2: routers trained with
	// a balancing loss keep experts within a factor of about 1.2–1.5 of
	// each other over a batch (Mixtral's paper, DeepSeek-V3's
	// auxiliary-loss-free balancing). Fewer distinct experts are then
	// touched by the same tokens, and under expert parallelism the GPU
	// with the popular experts does more of the work.
	Imbalance float64 `yaml:"imbalance"`
	// LayerOverhead is an MoE layer's kernels beyond a dense MLP's: the
	// router's top-k softmax, the tokens' alignment to experts' tiles and
	// the weighted sum of their outputs, about 2.5 µs each.
	LayerOverhead time.Duration `yaml:"layer_overhead"`
}

// moeCalibration is every profile's MoE terms (see MoECalibration).
func moeCalibration() MoECalibration {
	return MoECalibration{GEMMEfficiency: 1, ReadFactor: 1, Imbalance: 1.25, LayerOverhead: 7500 * time.Nanosecond}
}

// Counters are the relationships between a step's composition and the
// GPU's activity counters, fitted to a real GPU's (NVML's GPM counters,
// which dcgm-exporter's DCGM_FI_PROF_* fields read on Hopper) under
// steady loads of known composition. A step's kernels fall into
// families: the GEMMs that stream weights (Read), those bound by their
// arithmetic (Compute: the share of the GEMM time its L^p blend gives the
// arithmetic), decode attention, prefill attention, and the rest
// (elementwise kernels, launches, the step's fixed work).
type Counters struct {
	// EngineActive is GR_ENGINE_ACTIVE while the GPU has work queued:
	// below 1, for the gaps between kernels (0.92 on a measured H200).
	EngineActive float64 `yaml:"engine_active"`
	// SMActive and SMOccupancy are each family's SM_ACTIVE and
	// SM_OCCUPANCY while it runs; a step's are their time-weighted means.
	SMActive    Families `yaml:"sm_active"`
	SMOccupancy Families `yaml:"sm_occupancy"`
	// The tensor pipe counts cycles, padded tiles included: a GEMM of M
	// tokens keeps it TensorFactor(M) × max(M, TensorPadTokens) / M times
	// as long as its FLOPs at the peak rate would; the factor falls from
	// TensorSmallFactor at small M to TensorLargeFactor above
	// TensorKneeTokens (cuBLAS's small-M kernels use the pipe poorly).
	TensorPadTokens   float64 `yaml:"tensor_pad_tokens"`
	TensorSmallFactor float64 `yaml:"tensor_small_factor"`
	TensorLargeFactor float64 `yaml:"tensor_large_factor"`
	TensorKneeTokens  float64 `yaml:"tensor_knee_tokens"`
	// TensorDecodeAttentionFactor is the same for decode attention, whose
	// kernels pad each KV head's few query rows to a whole tile.
	TensorDecodeAttentionFactor float64 `yaml:"tensor_decode_attention_factor"`
	// DRAM_ACTIVE is the step's DRAM traffic (weights, KV, elementwise
	// traffic, and DRAMBytesPerFLOP of the GEMMs' arithmetic for their
	// operands' re-reads) over DRAMBandwidth × the step's time.
	DRAMBandwidth    float64 `yaml:"dram_bandwidth"`
	DRAMBytesPerFLOP float64 `yaml:"dram_bytes_per_flop"`
	// CopyUtilPerDRAM is DCGM_FI_DEV_MEM_COPY_UTIL (NVML's memory
	// utilisation, %) per unit of DRAM_ACTIVE.
	CopyUtilPerDRAM float64 `yaml:"copy_util_per_dram"`
	// IdleWatts is the board's draw with the model loaded and nothing
	// running. Power above it at the boost clock is DRAMWatts × DRAM_ACTIVE +
	// TensorWatts × PIPE_TENSOR_ACTIVE + SMWatts × SM_ACTIVE; past the
	// board's limit the board holds its limit and the SM clock falls to
	// boost × (available / demanded)^ClockExponent.
	IdleWatts     float64 `yaml:"idle_watts"`
	DRAMWatts     float64 `yaml:"dram_watts"`
	TensorWatts   float64 `yaml:"tensor_watts"`
	SMWatts       float64 `yaml:"sm_watts"`
	ClockExponent float64 `yaml:"clock_exponent"`
}

// Families holds one value per kernel family.
type Families struct {
	Read             float64 `yaml:"read"`
	Compute          float64 `yaml:"compute"`
	DecodeAttention  float64 `yaml:"decode_attention"`
	PrefillAttention float64 `yaml:"prefill_attention"`
	Other            float64 `yaml:"other"`
}

// TensorFactor is how many times longer than its FLOPs at the peak rate
// the tensor pipe counts a GEMM of m tokens busy, padding included.
func (c *Counters) TensorFactor(m float64) float64 {
	if m <= 0 {
		return 0
	}
	k2 := c.TensorKneeTokens * c.TensorKneeTokens
	f := c.TensorLargeFactor + (c.TensorSmallFactor-c.TensorLargeFactor)*k2/(m*m+k2)
	return f * max(m, c.TensorPadTokens) / m
}

// Frontend is the serving frontend's share of a request's latency as a
// client measures it (BLIS's α terms, applied as BLIS applies them).
type Frontend struct {
	// Arrival is from the client's send to the request's queueing in the
	// engine: HTTP, parsing, tokenisation (α0). It delays scheduling.
	Arrival time.Duration
	// PerToken is BLIS's per-output-token term (α2): added to the first
	// token's time and to every inter-token gap, so that it adds up over
	// an answer; it never holds a GPU step up.
	PerToken time.Duration
	// Stream is the API server's own work on each output token
	// (detokenising it, writing its SSE chunk). The API server is one
	// process for every stream of the replica: it takes a step's tokens
	// one after another, after what it still had, so a token waits for it
	// as well as for the GPU, more so the more sequences a step carries,
	// and a server that cannot keep up falls behind. It never holds a GPU
	// step up. 0 models none.
	Stream time.Duration
	// Finish is the response's end after its last token (α1).
	Finish time.Duration
	// LagSteps is how many engine steps behind the engine the API
	// server's output path runs: each token reaches the client that many
	// of its step's durations after it was sampled (vLLM's engine core and
	// API server are separate processes; outputs cross between them and
	// are detokenised while the next steps run). Fitted, not measured.
	LagSteps float64
}

// frontend is vLLM 0.15.1's API server as first fitted to the H100 runs
// of reference/calibration/README.md §A, before 8 of its rows were
// corrected (they held the first 300 requests' TTFTs, 1.3–1.6× the whole
// run's): 18 ms from the send to the engine's queue, 35 µs per streamed
// token, outputs 0.56 of a step behind the engine, BLIS's 0.78 ms at the
// end. The H200 (whose profile is its probe's and does not move), the L4
// and the A10G keep it; the campaign's GPUs have the refit (vllmFrontend).
func frontend() Frontend {
	return Frontend{Arrival: 17990 * time.Microsecond, PerToken: 34660 * time.Nanosecond, Finish: 777 * time.Microsecond, LagSteps: 0.5626}
}

// guessCounters are a GPU's counter relationships without a measurement
// of its own: the H200's, the DRAM counter scaled to its bandwidth, the
// watts to its board limit above idleWatts (a typical nvidia-smi reading
// of the part with a model loaded). A stated guess.
func guessCounters(bandwidth, tdp, idleWatts float64) Counters {
	h := h200Calibration()
	k := h.Counters
	k.DRAMBandwidth *= bandwidth / 4.8e12
	scale := (tdp - idleWatts) / (700 - k.IdleWatts)
	k.DRAMWatts, k.TensorWatts, k.SMWatts = k.DRAMWatts*scale, k.TensorWatts*scale, k.SMWatts*scale
	k.IdleWatts = idleWatts
	return k
}

// baseCalibration holds the coefficients of GPUs without a fit of their
// own: BLIS's trained-physics values (fitted across GPUs) for the step
// terms.
func baseCalibration() Calibration {
	return Calibration{
		GEMMEfficiency:         0.75,
		WeightLoadFactor:       1.33,
		KVReadFactor:           1.9,
		ActivationPasses:       40,
		StepOverhead:           126 * time.Microsecond,
		LayerOverhead:          32 * time.Microsecond,
		RequestOverhead:        4 * time.Microsecond,
		AllReduceLatency:       5 * time.Microsecond,
		ActivationReserveBytes: 2 << 30,
		Frontend:               frontend(),
		MoE:                    moeCalibration(),
	}
}

// hardwareProfiles returns the known GPUs. Sources: NVIDIA datasheets
// (H200: 989 TFLOPS dense BF16 = half of the 1,979 "with sparsity",
// 141 GB HBM3e at 4.8 TB/s, NVLink 900 GB/s; H100 SXM: 989 TFLOPS, 80 GB
// HBM3 at 3.35 TB/s, NVLink 900 GB/s; A100 80GB SXM4: 312 TFLOPS, 2,039
// GB/s, NVLink 600 GB/s; L40S: 362.05 TFLOPS dense, 48 GB GDDR6 at 864 GB/s,
// PCIe Gen4 x16 64 GB/s both ways), as quoted in serving-anchors.md §2.3,
// §2.5; L4: 121 TFLOPS dense BF16 (half the datasheet's 242 "with
// sparsity"), 24 GB GDDR6 at 300 GB/s, 72 W, PCIe Gen4 x16; A10G (AWS's
// g5, which NVIDIA publishes no datasheet for): 70 TFLOPS dense BF16 tensor
// (80 SMs at 1,710 MHz, FP32 accumulation at half rate, as AWS and
// Baseten's A10-vs-A10G comparison quote it), 24 GB GDDR6 at 600 GB/s,
// 300 W, PCIe Gen4 x16. Memory is the datasheet's decimal GB, a little
// below what the driver reports, so KV capacity errs low.
func hardwareProfiles() []Hardware {
	a100, l40s := a100Calibration(), l40sCalibration()
	a100.Counters = guessCounters(2.039e12, 400, 56)
	l40s.Counters = guessCounters(0.864e12, 350, 35)
	// No kernel profile of the L4 or the A10G is at hand, nor a run: their
	// GEMMs are assumed to reach a lower share of their peak than
	// datacentre parts' (the L40S's assumption before it was fitted), and
	// nothing of theirs is calibrated against measurements.
	l4 := baseCalibration()
	l4.GEMMEfficiency = 0.6
	a10g := l4
	l4.Counters = guessCounters(0.3e12, 72, 16)
	a10g.Counters = guessCounters(0.6e12, 300, 25)
	return []Hardware{
		{Name: "h200", PeakFLOPs: 989e12, PeakFP8FLOPs: 1979e12, MemBandwidth: 4.8e12, MemoryBytes: 141e9,
			InterconnectBandwidth: 450e9, Interconnect: "nvlink4", Calib: h200Calibration(),
			Device: Device{ModelName: "NVIDIA H200", FramebufferMiB: 143771, ReservedMiB: 594, TDPWatts: 700,
				SMClockMHz: 1980, IdleSMClockMHz: 345, MemClockMHz: 3201, HBM: true}},
		{Name: "h100", PeakFLOPs: 989e12, PeakFP8FLOPs: 1979e12, MemBandwidth: 3.35e12, MemoryBytes: 80e9,
			InterconnectBandwidth: 450e9, Interconnect: "nvlink4", Calib: h100Calibration(),
			Device: Device{ModelName: "NVIDIA H100 80GB HBM3", FramebufferMiB: 81559, ReservedMiB: 594, TDPWatts: 700,
				SMClockMHz: 1980, IdleSMClockMHz: 345, MemClockMHz: 2619, HBM: true}},
		{Name: "a100-80g", PeakFLOPs: 312e12, MemBandwidth: 2.039e12, MemoryBytes: 80e9,
			InterconnectBandwidth: 300e9, Interconnect: "nvlink3", Calib: a100,
			Device: Device{ModelName: "NVIDIA A100-SXM4-80GB", FramebufferMiB: 81920, ReservedMiB: 532, TDPWatts: 400,
				SMClockMHz: 1410, IdleSMClockMHz: 210, MemClockMHz: 1593, HBM: true}},
		{Name: "l40s", PeakFLOPs: 362e12, PeakFP8FLOPs: 733e12, MemBandwidth: 0.864e12, MemoryBytes: 48e9,
			InterconnectBandwidth: 32e9, Interconnect: "pcie4", Calib: l40s,
			Device: Device{ModelName: "NVIDIA L40S", FramebufferMiB: 46068, ReservedMiB: 473, TDPWatts: 350,
				SMClockMHz: 2520, IdleSMClockMHz: 210, MemClockMHz: 9001}},
		{Name: "l4", PeakFLOPs: 121e12, PeakFP8FLOPs: 242.5e12, MemBandwidth: 0.3e12, MemoryBytes: 24e9,
			InterconnectBandwidth: 32e9, Interconnect: "pcie4", Calib: l4,
			Device: Device{ModelName: "NVIDIA L4", FramebufferMiB: 23034, ReservedMiB: 435, TDPWatts: 72,
				SMClockMHz: 2040, IdleSMClockMHz: 210, MemClockMHz: 6251}},
		{Name: "a10g", PeakFLOPs: 70e12, MemBandwidth: 0.6e12, MemoryBytes: 24e9,
			InterconnectBandwidth: 32e9, Interconnect: "pcie4", Calib: a10g,
			Device: Device{ModelName: "NVIDIA A10G", FramebufferMiB: 23028, ReservedMiB: 435, TDPWatts: 300,
				SMClockMHz: 1710, IdleSMClockMHz: 210, MemClockMHz: 6251}},
	}
}

// HardwareByDeviceName is the profile whose GPU NVIDIA's tools name so
// (DCGM's modelName label, nvidia-smi's name), matched case-insensitively.
func HardwareByDeviceName(name string) (Hardware, bool) {
	for _, h := range hardwareProfiles() {
		if strings.EqualFold(h.Device.ModelName, strings.TrimSpace(name)) {
			return h, true
		}
	}
	return Hardware{}, false
}

// HardwareNames lists the valid hardware profile names.
func HardwareNames() []string {
	var names []string
	for _, h := range hardwareProfiles() {
		names = append(names, h.Name)
	}
	return names
}

// Defaults are vLLM's scheduling defaults for a GPU (arg_utils.py, for the
// OpenAI server): 1024 sequences and 8192 batched tokens on GPUs with at
// least 70 GiB that are not A100s, else 256 and 2048.
func (h *Hardware) Defaults() (maxNumSeqs, maxNumBatchedTokens int) {
	if h.MemoryBytes >= 70*(1<<30) && !strings.HasPrefix(strings.ToLower(h.Name), "a100") {
		return 1024, 8192
	}
	return 256, 2048
}

// LookupHardware returns the named hardware profile. Names are matched
// case-insensitively.
func LookupHardware(name string) (Hardware, error) {
	for _, h := range hardwareProfiles() {
		if strings.EqualFold(h.Name, name) {
			return h, nil
		}
	}
	return Hardware{}, fmt.Errorf("look up hardware %q: unknown profile (valid: %s)",
		name, strings.Join(HardwareNames(), ", "))
}
