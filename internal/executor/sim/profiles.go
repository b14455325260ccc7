package sim

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
	ModelName      string // DCGM's modelName label
	FramebufferMiB int    // DCGM_FI_DEV_FB_FREE + _USED + _RESERVED
	ReservedMiB    int    // kept by the driver (DCGM_FI_DEV_FB_RESERVED)
	IdleWatts      float64
	TDPWatts       float64 // board power limit
	SMClockMHz     int     // boost clock under load
	IdleSMClockMHz int
	MemClockMHz    int
	HBM            bool // memory temperature is reported (GDDR parts report 0)
}

// Calibration holds every fitted coefficient of the cost model for one
// hardware profile, so that a `calibrate` step can replace the whole table
// from measurements. The starting values come from published fits
// (reference/serving-anchors.md §2.3 BLIS roofline and trained-physics
// models, §2.5 roofline accuracy), not from guesses.
type Calibration struct {
	// Achieved fraction of PeakFLOPs in prefill-heavy and decode-heavy
	// steps (BLIS hardware_config.json: mfuPrefill, mfuDecode).
	MFUPrefill float64
	MFUDecode  float64

	// How much slower than the bandwidth bound real kernels are: BLIS's
	// fitted decode-KV β ≈ 1.9 and weight-loading β ≈ 1.4.
	KVReadFactor     float64
	WeightLoadFactor float64

	// Fixed CPU and launch overheads (BLIS trained-physics): per step, per
	// layer, per request in the batch and per output token sampled.
	StepOverhead        time.Duration
	LayerOverhead       time.Duration
	RequestOverhead     time.Duration
	OutputTokenOverhead time.Duration

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
}

// hopperCalibration is BLIS's H100 table; H200 has the same Hopper SMs, so
// it starts from the same coefficients until measured.
func hopperCalibration() Calibration {
	c := baseCalibration()
	c.MFUPrefill, c.MFUDecode = 0.45, 0.30
	return c
}

// baseCalibration holds the coefficients BLIS fits across GPUs.
func baseCalibration() Calibration {
	return Calibration{
		KVReadFactor:           1.9,
		WeightLoadFactor:       1.4,
		StepOverhead:           126 * time.Microsecond,
		LayerOverhead:          32 * time.Microsecond,
		RequestOverhead:        4 * time.Microsecond,
		OutputTokenOverhead:    46 * time.Microsecond,
		AllReduceLatency:       5 * time.Microsecond,
		ActivationReserveBytes: 2 << 30,
	}
}

// hardwareProfiles returns the known GPUs. Sources: NVIDIA datasheets
// (H200: 989 TFLOPS dense BF16 = half of the 1,979 "with sparsity",
// 141 GB HBM3e at 4.8 TB/s, NVLink 900 GB/s; H100 SXM: 989 TFLOPS, 80 GB
// HBM3 at 3.35 TB/s, NVLink 900 GB/s; A100 80GB SXM4: 312 TFLOPS, 2,039
// GB/s, NVLink 600 GB/s; L40S: 362.05 TFLOPS dense, 48 GB GDDR6 at 864 GB/s,
// PCIe Gen4 x16 64 GB/s both ways), as quoted in serving-anchors.md §2.3,
// §2.5. Memory is the datasheet's decimal GB, a little below what the driver
// reports, so KV capacity errs low.
func hardwareProfiles() []Hardware {
	a100 := baseCalibration()
	a100.MFUPrefill, a100.MFUDecode = 0.38, 0.18
	l40s := baseCalibration()
	l40s.MFUPrefill, l40s.MFUDecode = 0.32, 0.08
	return []Hardware{
		{Name: "h200", PeakFLOPs: 989e12, MemBandwidth: 4.8e12, MemoryBytes: 141e9,
			InterconnectBandwidth: 450e9, Interconnect: "nvlink4", Calib: hopperCalibration(),
			Device: Device{ModelName: "NVIDIA H200", FramebufferMiB: 143771, ReservedMiB: 594, IdleWatts: 76, TDPWatts: 700,
				SMClockMHz: 1980, IdleSMClockMHz: 345, MemClockMHz: 3201, HBM: true}},
		{Name: "h100", PeakFLOPs: 989e12, MemBandwidth: 3.35e12, MemoryBytes: 80e9,
			InterconnectBandwidth: 450e9, Interconnect: "nvlink4", Calib: hopperCalibration(),
			Device: Device{ModelName: "NVIDIA H100 80GB HBM3", FramebufferMiB: 81559, ReservedMiB: 594, IdleWatts: 70, TDPWatts: 700,
				SMClockMHz: 1980, IdleSMClockMHz: 345, MemClockMHz: 2619, HBM: true}},
		{Name: "a100-80g", PeakFLOPs: 312e12, MemBandwidth: 2.039e12, MemoryBytes: 80e9,
			InterconnectBandwidth: 300e9, Interconnect: "nvlink3", Calib: a100,
			Device: Device{ModelName: "NVIDIA A100-SXM4-80GB", FramebufferMiB: 81920, ReservedMiB: 532, IdleWatts: 56, TDPWatts: 400,
				SMClockMHz: 1410, IdleSMClockMHz: 210, MemClockMHz: 1593, HBM: true}},
		{Name: "l40s", PeakFLOPs: 362e12, MemBandwidth: 0.864e12, MemoryBytes: 48e9,
			InterconnectBandwidth: 32e9, Interconnect: "pcie4", Calib: l40s,
			Device: Device{ModelName: "NVIDIA L40S", FramebufferMiB: 46068, ReservedMiB: 473, IdleWatts: 35, TDPWatts: 350,
				SMClockMHz: 2520, IdleSMClockMHz: 210, MemClockMHz: 9001}},
	}
}

// Model is a transformer's shape as the cost model sees it.
type Model struct {
	Name string

	Layers        int // num_hidden_layers
	Hidden        int // hidden_size
	Heads         int // num_attention_heads
	KVHeads       int // num_key_value_heads
	HeadDim       int // hidden_size / num_attention_heads unless set
	Intermediate  int // intermediate_size
	Vocab         int // vocab_size
	MaxPosition   int // max_position_embeddings
	TiedEmbedding bool

	Params        float64 // total parameters, from the model card
	BytesPerParam float64 // 2 for bf16
}

// WeightBytes is the whole model's weight size.
func (m *Model) WeightBytes() float64 { return m.Params * m.BytesPerParam }

// modelProfiles returns the known models, with values from each model's
// Hugging Face config.json (meta-llama/Llama-3.1-8B-Instruct,
// meta-llama/Llama-3.1-70B-Instruct, Qwen/Qwen2.5-7B-Instruct,
// Qwen/Qwen2.5-0.5B-Instruct) and parameter counts from the safetensors
// index (8,030,261,248; 70,553,706,496; 7,615,616,512; 494,032,768).
func modelProfiles() []Model {
	return []Model{
		{Name: "llama-3.1-8b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128,
			Intermediate: 14336, Vocab: 128256, MaxPosition: 131072,
			Params: 8_030_261_248, BytesPerParam: 2},
		{Name: "llama-3.1-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128,
			Intermediate: 28672, Vocab: 128256, MaxPosition: 131072,
			Params: 70_553_706_496, BytesPerParam: 2},
		{Name: "qwen2.5-7b", Layers: 28, Hidden: 3584, Heads: 28, KVHeads: 4, HeadDim: 128,
			Intermediate: 18944, Vocab: 152064, MaxPosition: 32768,
			Params: 7_615_616_512, BytesPerParam: 2},
		{Name: "qwen2.5-0.5b", Layers: 24, Hidden: 896, Heads: 14, KVHeads: 2, HeadDim: 64,
			Intermediate: 4864, Vocab: 151936, MaxPosition: 32768, TiedEmbedding: true,
			Params: 494_032_768, BytesPerParam: 2},
	}
}

// HardwareNames lists the valid hardware profile names.
func HardwareNames() []string {
	var names []string
	for _, h := range hardwareProfiles() {
		names = append(names, h.Name)
	}
	return names
}

// ModelNames lists the valid model profile names.
func ModelNames() []string {
	var names []string
	for _, m := range modelProfiles() {
		names = append(names, m.Name)
	}
	return names
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

// LookupModel returns the named model profile. Names are matched
// case-insensitively.
func LookupModel(name string) (Model, error) {
	for _, m := range modelProfiles() {
		if strings.EqualFold(m.Name, name) {
			return m, nil
		}
	}
	return Model{}, fmt.Errorf("look up model %q: unknown profile (valid: %s)",
		name, strings.Join(ModelNames(), ", "))
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
