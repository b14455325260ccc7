package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/calibrate"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/speculative"
	"github.com/glassbox-llm/glassbox/internal/toolcall"
)

// engineFlags are the server's scheduling, cache and simulated-GPU flags,
// vLLM's names: serve and simulate take the same ones, so a simulated
// configuration is the command line that serves it.
type engineFlags struct {
	servedModelName     string
	simHardware         string
	simModel            string
	simCalibration      string
	tensorParallel      string // a count; plan takes a list
	expertParallel      bool
	simHostOverhead     time.Duration
	asyncScheduling     bool
	maxNumSeqs          string // a count; plan takes a list
	maxNumBatchedTokens string
	maxModelLen         string
	blockSize           int
	blockSizeSet        bool // --block-size was given
	enablePrefix        bool
	noEnablePrefix      bool
	gpuMemoryUtil       float64
	gpuMemoryUtilSet    bool // --gpu-memory-utilization was given
	kvCacheMemoryBytes  string
	kvCacheDtype        string
	quantization        string
	simDtype            string
	disableLogStats     bool
	disableGlassbox     bool
	showHidden          string
	maxQueued           int
	toolCallParser      string
	autoToolChoice      bool
	enableLoRA          bool
	loraModules         listFlag
	maxLoRAs            int
	maxLoRARank         int
	loraSizeSet         bool // --max-loras or --max-lora-rank given
	speculativeConfig   string
	specAcceptanceFrom  string
	agent               agentFlags
	kv                  servingFlags
}

func (e *engineFlags) register(fs *flag.FlagSet) {
	e.agent.register(fs)
	e.kv.register(fs)
	fs.StringVar(&e.servedModelName, "served-model-name", "", "model name(s) clients use, comma-separated (default: the model)")
	fs.StringVar(&e.simHardware, "sim-hardware", "h200", "simulated GPU: "+strings.Join(profiles.HardwareNames(), ", "))
	fs.StringVar(&e.simModel, "sim-model", "llama-3.1-8b", "simulated model: "+strings.Join(profiles.ModelNames(), ", ")+
		" (or its Hugging Face name), or any model's Hugging Face config.json: a path, or hf://OWNER/REPO")
	fs.StringVar(&e.simCalibration, "sim-calibration", "", "a profile file from 'glassbox simulate calibrate' to use instead of the built-in coefficients")
	fs.StringVar(&e.tensorParallel, "tensor-parallel-size", "1", "GPUs the simulated model is split over")
	fs.BoolVar(&e.expertParallel, "enable-expert-parallel", false, "place a mixture of experts' experts whole on the GPUs instead of splitting each over them, as vLLM's flag (the simulator)")
	fs.DurationVar(&e.simHostOverhead, "sim-host-overhead", 0, "host time per simulated step during which the GPU idles (a slow CPU, a Python-heavy engine), e.g. 5ms")
	fs.BoolVar(&e.asyncScheduling, "async-scheduling", false, "overlap the host's work for the next step with the GPU's for this one, as vLLM's flag (the simulator only)")
	fs.StringVar(&e.maxNumSeqs, "max-num-seqs", "", "most sequences running at once (default as vLLM: 1024 on H100/H200-class GPUs, else 256)")
	fs.StringVar(&e.maxNumBatchedTokens, "max-num-batched-tokens", "", "token budget of one step, e.g. 8192 or 8k (default as vLLM: 8192 on H100/H200-class GPUs, else 2048)")
	fs.StringVar(&e.maxModelLen, "max-model-len", "", "longest prompt plus output, e.g. 32768 or 32k (default: the model's)")
	fs.IntVar(&e.blockSize, "block-size", replica.DefaultBlockSize, "tokens per KV-cache block")
	fs.BoolVar(&e.enablePrefix, "enable-prefix-caching", true, "reuse KV blocks of shared prompt prefixes")
	fs.BoolVar(&e.noEnablePrefix, "no-enable-prefix-caching", false, "turn automatic prefix caching off")
	fs.Float64Var(&e.gpuMemoryUtil, "gpu-memory-utilization", 0.92, "fraction of GPU memory for weights, activations and the KV cache (a real GPU's default is vLLM's 0.9)")
	fs.StringVar(&e.kvCacheMemoryBytes, "kv-cache-memory-bytes", "", "KV-cache size per GPU, e.g. 8G; overrides --gpu-memory-utilization")
	fs.StringVar(&e.kvCacheDtype, "kv-cache-dtype", "auto", "KV cache element type: auto (fp16 on the CPU, the model's on the simulator), fp16 or fp32 (the CPU's), fp8, fp8_e4m3 or fp8_e5m2 (the simulator's: one byte an element)")
	fs.StringVar(&e.quantization, "quantization", "", "weight quantization, vLLM's flag: fp8 (the simulator's Hopper profiles: FP8 linear layers at the FP8 GEMM rates measured on an H200)")
	fs.StringVar(&e.simDtype, "sim-dtype", "bf16", "the simulated model's dtype: bf16, or fp8 (FP8 weights and KV cache: --quantization fp8 --kv-cache-dtype fp8)")
	fs.BoolVar(&e.disableLogStats, "disable-log-stats", false, "export no vllm: engine metrics, as vLLM")
	fs.BoolVar(&e.disableGlassbox, "disable-glassbox-metrics", false, "export exactly what vLLM exports: no glassbox_* (or Go runtime) series")
	fs.StringVar(&e.showHidden, "show-hidden-metrics-for-version", "", "also export the metrics vLLM of this version (e.g. 0.10) exported that vLLM 0.30 has dropped, such as vllm:gpu_cache_usage_perc")
	fs.IntVar(&e.maxQueued, "max-num-queued-reqs", replica.DefaultMaxQueuedRequests, "waiting requests beyond which new ones get 503 (vLLM 0.32's flag; same as --max-queued-requests)")
	fs.IntVar(&e.maxQueued, "max-queued-requests", replica.DefaultMaxQueuedRequests, "waiting requests beyond which new ones get 503")
	fs.StringVar(&e.toolCallParser, "tool-call-parser", "", "how tool calls are read from the model's output with tool_choice auto: "+strings.Join(toolcall.Parsers(), ", ")+
		" (default: the one the chat template's tool format calls for; hermes for ChatML and the simulator)")
	fs.StringVar(&e.speculativeConfig, "speculative-config", "", `speculative decoding, vLLM's JSON: {"method":"ngram","num_speculative_tokens":K,"prompt_lookup_max":N,"prompt_lookup_min":M} (prompt lookup) `+
		`or {"model":DRAFT,"num_speculative_tokens":K} (a draft model: on the CPU a GGUF of the same tokenizer; on the simulator a model profile such as llama-3.2-1b, `+
		`with "rejection_sample_method":"synthetic" and synthetic_acceptance_rates, or --spec-acceptance-from)`)
	fs.StringVar(&e.specAcceptanceFrom, "spec-acceptance-from", "", "the simulator's acceptance fitted from a real run: a /metrics scrape of vLLM or glassbox with the vllm:spec_decode_* counters, "+
		"or BEFORE,AFTER (two scrapes of one server: the run between them); its per-position rates become --speculative-config's synthetic acceptance")
	fs.BoolVar(&e.autoToolChoice, "enable-auto-tool-choice", false, "vLLM's switch for tool_choice auto; glassbox enables it whenever a tool-call parser is known, and with this flag requires one")
	fs.BoolVar(&e.enableLoRA, "enable-lora", false, "serve LoRA adapters (--lora-modules) as model names; the simulated GPU only")
	fs.Var(&e.loraModules, "lora-modules", `LoRA adapters: name=path, or JSON {"name": …, "path": …}; space-separated or repeated`)
	fs.IntVar(&e.maxLoRAs, "max-loras", 1, "most distinct LoRA adapters in one step (the GPU's adapter slots)")
	fs.IntVar(&e.maxLoRARank, "max-lora-rank", 16, "the adapters' rank, which prices them on the simulated GPU")
}

// visited records what the parsed command line set explicitly.
func (e *engineFlags) visited(fs *flag.FlagSet) {
	fs.Visit(func(fl *flag.Flag) {
		e.blockSizeSet = e.blockSizeSet || fl.Name == "block-size"
		e.loraSizeSet = e.loraSizeSet || fl.Name == "max-loras" || fl.Name == "max-lora-rank"
		e.gpuMemoryUtilSet = e.gpuMemoryUtilSet || fl.Name == "gpu-memory-utilization"
	})
}

// replicaConfig is the replica these flags describe.
func (e *engineFlags) replicaConfig() (replica.Config, error) {
	c := replica.Config{
		Sim:       sim.Config{Hardware: e.simHardware, Model: e.simModel, HostOverhead: e.simHostOverhead, ExpertParallel: e.expertParallel},
		BlockSize: e.blockSize, UserSpecifiedBlockSize: e.blockSizeSet,
		NoPrefixCaching: !e.enablePrefix || e.noEnablePrefix, ShowHiddenMetricsForVersion: e.showHidden,
		GPUMemoryUtilization: e.gpuMemoryUtil, MaxQueuedRequests: e.maxQueued, DisableLogStats: e.disableLogStats,
		DisableGlassboxMetrics: e.disableGlassbox, KVCacheDtype: e.kvCacheDtype, Quantization: e.quantization, AsyncScheduling: e.asyncScheduling,
		ToolCallParser: e.toolCallParser, EnableAutoToolChoice: e.autoToolChoice,
	}
	if err := e.agent.apply(&c); err != nil {
		return c, err
	}
	var err error
	if c.Sim.Model, err = resolveSimModel(e.simModel, os.Stderr); err != nil {
		return c, err
	}
	if err := e.kv.apply(&c); err != nil {
		return c, err
	}
	switch strings.ToLower(e.simDtype) {
	case "bf16", "auto", "":
	case "fp8":
		if e.quantization != "" && !strings.EqualFold(e.quantization, "fp8") || e.kvCacheDtype != "auto" && !strings.HasPrefix(strings.ToLower(e.kvCacheDtype), "fp8") {
			return c, fmt.Errorf("--sim-dtype fp8 sets --quantization fp8 and --kv-cache-dtype fp8; it contradicts --quantization %q --kv-cache-dtype %q", e.quantization, e.kvCacheDtype)
		}
		c.Quantization = "fp8"
		if c.KVCacheDtype == "auto" {
			c.KVCacheDtype = "fp8"
		}
	default:
		return c, fmt.Errorf("--sim-dtype %s: want bf16 or fp8", e.simDtype)
	}
	if e.speculativeConfig != "" {
		if c.Speculative, err = speculative.Parse([]byte(e.speculativeConfig)); err != nil {
			return c, err
		}
	}
	if e.specAcceptanceFrom != "" {
		if !c.Speculative.Enabled() {
			return c, errors.New("--spec-acceptance-from needs --speculative-config: the fitted rates are its acceptance")
		}
		rates, err := fitAcceptance(e.specAcceptanceFrom)
		if err != nil {
			return c, fmt.Errorf("--spec-acceptance-from %s: %w", e.specAcceptanceFrom, err)
		}
		if err := c.Speculative.Fitted(rates); err != nil {
			return c, fmt.Errorf("--spec-acceptance-from %s: %w", e.specAcceptanceFrom, err)
		}
	}
	if c.Sim.TensorParallel, err = parseCount(e.tensorParallel, 1); err != nil {
		return c, fmt.Errorf("--tensor-parallel-size: %w", err)
	}
	if c.MaxNumSeqs, err = parseCount(e.maxNumSeqs, 0); err != nil {
		return c, fmt.Errorf("--max-num-seqs: %w", err)
	}
	if c.MaxNumBatchedTokens, err = parseCount(e.maxNumBatchedTokens, 0); err != nil {
		return c, fmt.Errorf("--max-num-batched-tokens: %w", err)
	}
	if c.MaxModelLen, err = parseCount(e.maxModelLen, 0); err != nil {
		return c, fmt.Errorf("--max-model-len: %w", err)
	}
	kv, err := parseCount(e.kvCacheMemoryBytes, 0)
	if err != nil {
		return c, fmt.Errorf("--kv-cache-memory-bytes: %w", err)
	}
	c.KVCacheMemoryBytes = int64(kv)
	if e.servedModelName != "" {
		c.ServedModelNames = strings.Split(e.servedModelName, ",")
	}
	if c.LoRA, err = e.loRA(); err != nil {
		return c, err
	}
	if e.simCalibration != "" {
		hw, cal, err := calibrate.ReadProfileFile(e.simCalibration)
		if err != nil {
			return c, err
		}
		if !strings.EqualFold(hw, e.simHardware) {
			return c, fmt.Errorf("--sim-calibration %s was fitted for %s, not --sim-hardware %s", e.simCalibration, hw, e.simHardware)
		}
		c.Sim.Calib = &cal
	}
	return c, nil
}
