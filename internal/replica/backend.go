package replica

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/dcgm"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/cpu"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/server"
	"github.com/glassbox-llm/glassbox/internal/speculative"
	"github.com/glassbox-llm/glassbox/internal/toolcall"
)

// backend is what differs between the simulated GPU and a real model: the
// model's tokenizer and template, its defaults and facts, and how to size
// the KV cache and start the executor once the engine's sizes are known.
type backend struct {
	model server.Model
	chat  server.ChatRenderer // nil: ChatML
	// toolParser is the tool-call format the template asks for ("": none
	// known); ChatML's is hermes.
	toolParser string
	embeddings *server.Embeddings // nil: the model does not embed
	eos        []int
	name       string // default served model name
	describe   string

	maxModelLen                 int // the model's context
	defaultSeqs, defaultBatched int
	cacheDtype                  string
	stepTimeout                 time.Duration // the watchdog's default; 0: DefaultStepTimeout

	executorInfo             map[string]string
	peakFLOPs, peakBandwidth float64
	hardware                 *profiles.Hardware // the simulated GPU, nil on the CPU
	gpus                     int
	// gpuCounters, on a real GPU, starts dcgm's NVML exporter on it;
	// close ends it.
	gpuCounters func(interval time.Duration, hostname string, log *slog.Logger) (*dcgm.NVMLExporter, error)

	blocks func(kvBytes int64, blockSize, maxModelLen, maxNumSeqs, maxNumBatchedTokens int) (int, error)
	// offload sizes a CPU KV offload tier of size bytes; nil where the
	// executor has none (the CPU's, the GPU's).
	offload func(size float64, blockSize int) engine.Offload
	// another starts one more copy of the executor on clock, for a
	// data-parallel rank; nil where the executor has one model copy.
	another func(clock engine.Clock) (engine.Executor, error)
	start   func(numBlocks, blockSize int) (engine.Executor, error)
	close   func() // after the engine stops
	// memoryLine, when set, describes a GPU's memory split once blocks
	// ran.
	memoryLine func() string
}

func simBackend(cfg *Config) (*backend, error) {
	cfg.Sim.AsyncScheduling = cfg.AsyncScheduling
	cfg.Sim.Quantization, cfg.Sim.KVCacheDtype = cfg.Quantization, cfg.KVCacheDtype
	if l := cfg.LoRA; l != nil {
		cfg.Sim.LoRA = &sim.LoRA{MaxLoRAs: l.MaxLoRAs, Rank: l.MaxRank}
	}
	exec, err := sim.New(cfg.Sim)
	if err != nil {
		return nil, err
	}
	if cfg.GPUMemoryUtilization == 0 {
		cfg.GPUMemoryUtilization = 0.92
	}
	info := exec.Info()
	hw := exec.CostModel().HW
	seqs, batched := hw.Defaults()
	m := exec.CostModel().Model
	weights, kv := m.WeightsName(), "bf16"
	if m.KVElementBytes() == 1 {
		kv = "fp8"
	}
	describe := fmt.Sprintf("the simulated executor: %s on %d× %s (%s weights, %s KV)", info.Model, info.TensorParallel, info.Hardware, weights, kv)
	if info.Draft != "" {
		describe += fmt.Sprintf(", drafting with %s on %d", info.Draft, info.DraftTensorParallel)
		if cfg.Speculative.DraftMaxModelLen == 0 {
			cfg.Speculative.DraftMaxModelLen = info.DraftMaxModelLen // vLLM's default: the draft's own context
		}
	}
	b := &backend{
		model: exec.Vocab(), eos: []int{exec.Vocab().EOS()}, name: info.Model, toolParser: toolcall.Hermes,
		// The simulator embeds with any model profile, its hidden size long;
		// its vectors may be shortened as a Matryoshka model's.
		embeddings:  &server.Embeddings{Dim: exec.CostModel().Model.Hidden, Pooling: "simulated", Truncatable: true},
		describe:    describe,
		maxModelLen: info.MaxModelLen, defaultSeqs: seqs, defaultBatched: batched, cacheDtype: cmp.Or(cfg.KVCacheDtype, "auto"),
		executorInfo: map[string]string{
			"executor": info.Executor, "hardware": info.Hardware, "model": info.Model,
			"tensor_parallel_size": strconv.Itoa(info.TensorParallel),
			// The host time the simulator adds per step, so that a replay
			// (doctor --verify) can add it too.
			"host_overhead_seconds": strconv.FormatFloat(cfg.Sim.HostOverhead.Seconds(), 'g', -1, 64),
		},
		peakFLOPs: info.PeakFLOPs, peakBandwidth: info.MemBandwidth, hardware: &hw, gpus: info.TensorParallel,
		blocks: func(kvBytes int64, blockSize, _, _, _ int) (int, error) {
			return exec.KVCacheBlocks(cfg.GPUMemoryUtilization, kvBytes, blockSize)
		},
		start: func(int, int) (engine.Executor, error) { return exec, nil },
		close: func() {},
		another: func(clock engine.Clock) (engine.Executor, error) {
			c := cfg.Sim
			c.Clock = clock
			return sim.New(c)
		},
		offload: func(size float64, blockSize int) engine.Offload {
			n, bytes, bw := costmodel.HostKV(hw, m, info.TensorParallel, blockSize, size)
			return engine.Offload{Blocks: n, BlockBytes: bytes, Bandwidth: bw}
		},
	}
	if q := cfg.Quantization; q != "" {
		// The weights' type (vLLM's --quantization), so that a replay
		// (doctor --verify) runs the same arithmetic.
		b.executorInfo["quantization"] = q
	}
	if cfg.Sim.ExpertParallel {
		// vLLM's --enable-expert-parallel, for a replay.
		b.executorInfo["enable_expert_parallel"] = "True"
	}
	if m := exec.CostModel().Model; m.Format(m.Weights.MLP).FP8 || m.Format(m.Weights.Experts).FP8 {
		// The MLPs' (or experts') GEMMs run on FP8 tensor cores, by the
		// flag or the checkpoint: the doctor reads MFU against the FP8 peak.
		b.executorInfo["weights"] = "fp8"
	}
	return b, nil
}

// chooseBackend is the simulator without a model, else the executor
// cfg.Device names; auto takes the GPU when it can run the model and says
// in note why it took the CPU otherwise.
func chooseBackend(cfg *Config) (b *backend, note string, err error) {
	if cfg.Model == "" {
		if cfg.Device == "cuda" {
			return nil, "", errors.New("--device cuda runs a --model on the GPU; without one glassbox serves the simulator")
		}
		b, err = simBackend(cfg)
		return b, "", err
	}
	switch cfg.Device {
	case "cpu":
		b, err = cpuBackend(cfg)
	case "cuda":
		if b, err = cudaBackend(cfg); err != nil {
			err = fmt.Errorf("--device cuda: %w", err)
		}
	case "", "auto":
		if b, err = cudaBackend(cfg); err == nil {
			return b, "", nil
		}
		note = fmt.Sprintf("running on the CPU (--device auto): %v", err)
		cfg.Logger.Debug(note)
		b, err = cpuBackend(cfg)
	default:
		return nil, "", fmt.Errorf("--device %q: want cuda, cpu or auto", cfg.Device)
	}
	return b, note, err
}

// memory is the banner's GPU memory line, or "".
func (b *backend) memory() string {
	if b.memoryLine == nil {
		return ""
	}
	return b.memoryLine()
}

// templateParser is the tool-call parser a chat template calls for:
// hermes for ChatML (no usable template), which glassbox renders tools
// into in that format.
func templateParser(template string) string {
	if template == "" {
		return toolcall.Hermes
	}
	return toolcall.Detect(template)
}

// cacheDtypeLabel is cache_config_info's cache_dtype: "auto" as vLLM
// writes its default, else the type's one name whichever alias chose it,
// as glassbox_executor_info names it.
func cacheDtypeLabel(flag string, dt model.KVDtype) string {
	if flag == "" || flag == "auto" {
		return "auto"
	}
	return dt.String()
}

// cpuBackend loads a GGUF model for the CPU executor: read into memory, or
// with MMap mapped, for the life of the replica.
func cpuBackend(cfg *Config) (*backend, error) {
	if cfg.AsyncScheduling {
		return nil, errors.New("--async-scheduling: the CPU executor's host work is its compute; only the simulated GPU overlaps it")
	}
	if cfg.Quantization != "" {
		return nil, fmt.Errorf("--quantization %s: the CPU executor runs the GGUF file's own weight types (quantise the file instead, e.g. glassbox model random --type q8_0)", cfg.Quantization)
	}
	dtype, err := model.ParseKVDtype(cfg.KVCacheDtype)
	if err != nil {
		return nil, fmt.Errorf("--kv-cache-dtype: %w", err)
	}
	lc := cpu.LoadConfig{Path: cfg.Model, Tokenizer: cfg.Tokenizer, MMap: cfg.MMap, KVDtype: dtype, DraftKVDtype: dtype, Logger: cfg.Logger}
	sp := &cfg.Speculative
	if sp.Method == speculative.MethodDraftModel {
		lc.Draft = sp.Model
		if sp.DraftKVCacheDtype != "" {
			if lc.DraftKVDtype, err = model.ParseKVDtype(sp.DraftKVCacheDtype); err != nil {
				return nil, fmt.Errorf("--speculative-config kv_cache_dtype: %w", err)
			}
		}
	}
	l, err := cpu.Load(lc)
	if err != nil {
		return nil, err
	}
	if l.Draft != nil && sp.DraftMaxModelLen == 0 {
		sp.DraftMaxModelLen = l.DraftContextLen // vLLM's default: the draft's own context
	}
	threads := cfg.Threads
	if threads < 1 {
		threads = runtime.NumCPU()
	}
	var emb *server.Embeddings
	if wc := l.Weights.Config; wc.Pooling != model.PoolNone {
		emb = &server.Embeddings{Dim: wc.Hidden, Pooling: wc.Pooling.String()}
	}
	return &backend{
		embeddings: emb,
		model:      l.Vocab, chat: l.Chat, toolParser: templateParser(l.Chat.Template()), eos: l.EOG, name: cfg.Model, describe: l.Describe(threads),
		maxModelLen: l.ContextLen, defaultSeqs: cpu.DefaultMaxNumSeqs, defaultBatched: cpu.DefaultMaxNumBatchedTokens,
		cacheDtype: cacheDtypeLabel(cfg.KVCacheDtype, dtype), stepTimeout: DefaultCPUStepTimeout,
		executorInfo: map[string]string{"executor": "cpu", "hardware": "cpu", "model": l.Weights.Arch, "tensor_parallel_size": "1",
			"kernels": l.Weights.Kernels().String(), "kv_cache_dtype": dtype.String()},
		blocks: func(kvBytes int64, blockSize, maxModelLen, maxNumSeqs, _ int) (int, error) {
			return l.KVBlocks(kvBytes, blockSize, maxModelLen, maxNumSeqs), nil
		},
		start: func(numBlocks, blockSize int) (engine.Executor, error) { return l.Start(numBlocks, blockSize, threads) },
		close: l.Close,
	}, nil
}

// describeCounters is the banner's account of the NVML exporter: the
// board, the interval, and what it does not read.
func describeCounters(e *dcgm.NVMLExporter, interval time.Duration) string {
	s := fmt.Sprintf("dcgm-exporter's series of the %s read from NVML every %v", e.ModelName(), cmpInterval(interval))
	if why := e.GPMMissing(); why != "" {
		s += "; no DCGM_FI_PROF_* series: this board or driver has no GPM (Hopper and later), as dcgm-exporter without DCP (" + why + ")"
	} else {
		s += " (DCGM_FI_PROF_* from GPM)"
	}
	if f := e.Failing(); len(f) > 0 {
		s += "; not read here: " + strings.Join(f, ", ")
	}
	return s
}

func cmpInterval(d time.Duration) time.Duration {
	if d == 0 {
		return time.Second
	}
	return d
}

// CUDAConfig says which GPU the CUDA executor opens and where cuBLASLt
// is (the executor's DeviceConfig, kept here so that a build without
// the GPU executor, -tags nocuda, links none of it).
type CUDAConfig struct {
	Ordinal int
	// BLASLt is cuBLASLt's file; empty searches the usual places, with
	// BLASLtDirs first.
	BLASLt     string
	BLASLtDirs []string
}
