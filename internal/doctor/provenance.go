package doctor

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// source is where a signal came from: what a finding that uses it may
// claim rests on it.
type source string

const (
	srcNone     source = ""
	srcGlassbox source = "glassbox"         // glassbox's own series
	srcDCGM     source = "dcgm"             // dcgm-exporter beside the target
	srcVLLM     source = "vllm"             // vLLM's series (which glassbox exports too)
	srcFlag     source = "flag"             // the user said so
	srcGPU      source = "gpu-profile"      // the GPU's datasheet, from --gpu or DCGM's modelName
	srcInferred source = "inferred"         // read off the series' shape or vLLM's defaults
	srcEstimate source = "vllm-estimate"    // derived from vLLM's step and latency series
	srcPlateau  source = "inferred-plateau" // the running gauge's plateau
)

// targetConfig is the target's configuration from its info series; zero
// where unknown.
type targetConfig struct {
	maxNumSeqs, maxBatchedTokens, maxModelLen int
	blockSize, numBlocks, kvBytes             int
	prefixCaching                             *bool
	gpuMemUtil                                float64
	hardware, model                           string
	quantization, cacheDtype                  string // vLLM's --quantization and --kv-cache-dtype ("" and "auto" for the model's)
	tensorParallel                            int
	engines                                   int     // data-parallel ranks (InfoEngines), at least 1
	expertParallel                            bool    // --enable-expert-parallel
	offloadGiB                                float64 // --kv-offloading-size: host memory for the offload tier, 0 without one
	hostOverhead                              float64 // the simulator's, seconds
	asyncScheduling                           bool
	kvMaxConcurrency                          float64
}

func readConfig(w *Window) targetConfig {
	atoi := func(f, k string) int {
		n, _ := strconv.Atoi(w.Info[f][k])
		return n
	}
	c := targetConfig{
		maxNumSeqs: atoi(metricspec.SchedulerConfigInfo, "max_num_seqs"), maxBatchedTokens: atoi(metricspec.SchedulerConfigInfo, "max_num_batched_tokens"),
		maxModelLen: atoi(metricspec.SchedulerConfigInfo, "max_model_len"), blockSize: atoi(metricspec.CacheConfigInfo, "block_size"),
		numBlocks: atoi(metricspec.CacheConfigInfo, "num_gpu_blocks"), kvBytes: atoi(metricspec.CacheConfigInfo, "kv_cache_memory_bytes"),
		hardware: w.Info[metricspec.ExecutorInfo]["hardware"], model: w.Info[metricspec.ExecutorInfo]["model"], tensorParallel: atoi(metricspec.ExecutorInfo, "tensor_parallel_size"),
		asyncScheduling: w.Info[metricspec.SchedulerConfigInfo]["async_scheduling"] == "True",
		quantization:    w.Info[metricspec.ExecutorInfo]["quantization"], cacheDtype: w.Info[metricspec.CacheConfigInfo]["cache_dtype"],
		engines:        max(1, atoi(InfoEngines, "count")),
		expertParallel: w.Info[metricspec.ExecutorInfo]["enable_expert_parallel"] == "True",
	}
	c.gpuMemUtil, _ = strconv.ParseFloat(w.Info[metricspec.CacheConfigInfo]["gpu_memory_utilization"], 64)
	c.hostOverhead, _ = strconv.ParseFloat(w.Info[metricspec.ExecutorInfo]["host_overhead_seconds"], 64)
	c.kvMaxConcurrency, _ = strconv.ParseFloat(w.Info[metricspec.CacheConfigInfo][metricspec.CacheMaxConcurrency], 64)
	c.offloadGiB, _ = strconv.ParseFloat(w.Info[metricspec.CacheConfigInfo]["kv_offloading_size"], 64) // "None" without a tier
	switch w.Info[metricspec.CacheConfigInfo]["enable_prefix_caching"] {
	case "True", "true":
		t := true
		c.prefixCaching = &t
	case "False", "false":
		f := false
		c.prefixCaching = &f
	}
	return c
}

// peaks are the GPU's peak FLOP/s and bandwidth (NaN when unknown): from
// glassbox's gauges, else the profile --gpu names, else the one DCGM's
// modelName matches; with where they came from and the GPU's name.
func peaks(w *Window, hints Hints, hardware string) (flops, bandwidth float64, src source, gpu string) {
	if g := w.Gauge(metricspec.ExecutorPeakFLOPs); len(g) > 0 && g[len(g)-1].V > 0 {
		bandwidth = math.NaN()
		if b := w.Gauge(metricspec.ExecutorPeakMemBandwidth); len(b) > 0 {
			bandwidth = b[len(b)-1].V
		}
		return g[len(g)-1].V, bandwidth, srcGlassbox, hardware
	}
	if hw, ok := hardwareHint(w, hints); ok {
		return hw.PeakFLOPs, hw.MemBandwidth, srcGPU, hw.Name
	}
	return math.NaN(), math.NaN(), srcNone, ""
}

// fp8Peak is the GPU's FP8 peak FLOP/s when its weights are FP8 (glassbox's
// executor info says so: weights="fp8", by the flag or the checkpoint; or
// --quantization fp8): their GEMMs run at it.
// NaN otherwise, or for a GPU without FP8 arithmetic (an A100).
func fp8Peak(w *Window, hints Hints, c *targetConfig) float64 {
	if !strings.EqualFold(c.quantization, "fp8") && w.Info[metricspec.ExecutorInfo]["weights"] != "fp8" && !strings.EqualFold(hints.Quantization, "fp8") {
		return math.NaN()
	}
	hw, err := profiles.LookupHardware(c.hardware)
	ok := err == nil && c.hardware != ""
	if !ok {
		hw, ok = hardwareHint(w, hints)
	}
	if !ok || !(hw.PeakFP8FLOPs > 0) {
		return math.NaN()
	}
	return hw.PeakFP8FLOPs
}

// hardwareHint is the profile of --gpu, or of DCGM's modelName.
func hardwareHint(w *Window, hints Hints) (profiles.Hardware, bool) {
	if g := hints.GPU; g != "" {
		hw, err := profiles.LookupHardware(g)
		return hw, err == nil
	}
	if name := w.Info[InfoDCGM]["modelName"]; name != "" {
		return profiles.HardwareByDeviceName(name)
	}
	return profiles.Hardware{}, false
}

// Peaks are the target's GPU peak FLOP/s and bandwidth as the doctor finds
// them (glassbox's gauges, --gpu, or DCGM's modelName), and where from; NaN
// and "" when unknown.
func (s *Signals) Peaks() (flops, bandwidth float64, src string) {
	f, b, from, gpu := peaks(s.w, s.hints, s.cfg.hardware)
	switch from {
	case srcNone:
		return f, b, ""
	case srcGPU:
		return f, b, string(from) + ":" + gpu
	}
	return f, b, string(from)
}

// provenance lists the sources of the signals a finding rests on and how
// sure it can be: high when every one was measured or given, medium when
// one was inferred, low when utilisation (or the host's share of a step)
// was estimated from vLLM's series alone.
func (s *Signals) provenance(uses []SignalName) ([]string, string) {
	srcs := []string{string(srcVLLM)}
	conf := "high"
	for _, n := range uses {
		src := s.src(n)
		if src != srcNone && !slices.Contains(srcs, string(src)) {
			srcs = append(srcs, string(src))
		}
		switch {
		case src == srcEstimate || (src == srcNone && (n == SigBusy || n == SigHostShare)):
			conf = "low"
		case (src == srcInferred || src == srcPlateau) && conf == "high":
			conf = "medium"
		}
	}
	return srcs, conf
}
