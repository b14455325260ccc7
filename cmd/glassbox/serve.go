package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/replica"
)

// serveFlags are serve's command line, with vLLM's names where vLLM has the
// same knob.
type serveFlags struct {
	host, port          string
	model               string
	servedModelName     string
	simHardware         string
	simModel            string
	tensorParallel      int
	simTimeScale        float64
	simHostOverhead     time.Duration
	maxNumSeqs          int
	maxNumBatchedTokens string
	maxModelLen         string
	blockSize           int
	enablePrefix        bool
	noEnablePrefix      bool
	gpuMemoryUtil       float64
	kvCacheMemoryBytes  string
	apiKey              string
	disableLogStats     bool
	showHidden          string
	blockSizeSet        bool // --block-size was given
	maxQueued           int
	threads             int
	mmap                bool
	tokenizer           string
	shutdownTimeout     time.Duration
	logLevel            string
	obs                 observeFlags
}

func parseServeFlags(args []string, stderr io.Writer) (*serveFlags, error) {
	f := &serveFlags{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.host, "host", "0.0.0.0", "address to listen on")
	fs.StringVar(&f.port, "port", "8000", "port to listen on (0 picks a free one)")
	fs.StringVar(&f.model, "model", "", "GGUF model to run on this CPU (a path, or hf://OWNER/REPO/FILE.gguf); empty serves the simulator")
	fs.IntVar(&f.threads, "threads", runtime.NumCPU(), "compute threads of the CPU executor")
	fs.StringVar(&f.tokenizer, "tokenizer", "", "with --model: a tokenizer.json (or a directory holding it and tokenizer_config.json) to use instead of the GGUF's")
	fs.BoolVar(&f.mmap, "mmap", false, "map the GGUF file instead of reading it into (huge-page) memory: starts faster and shares the page cache, decodes slower")
	fs.StringVar(&f.servedModelName, "served-model-name", "", "model name(s) clients use, comma-separated (default: the model)")
	fs.StringVar(&f.simHardware, "sim-hardware", "h200", "simulated GPU: "+strings.Join(sim.HardwareNames(), ", "))
	fs.StringVar(&f.simModel, "sim-model", "llama-3.1-8b", "simulated model: "+strings.Join(sim.ModelNames(), ", "))
	fs.IntVar(&f.tensorParallel, "tensor-parallel-size", 1, "GPUs the simulated model is split over")
	fs.Float64Var(&f.simTimeScale, "sim-time-scale", 1, "simulated step time multiplier: 1 is real time, 0.1 is ten times faster, 0 never waits")
	fs.DurationVar(&f.simHostOverhead, "sim-host-overhead", 0, "host time per simulated step during which the GPU idles (a slow CPU, a Python-heavy engine), e.g. 5ms")
	fs.IntVar(&f.maxNumSeqs, "max-num-seqs", 0, "most sequences running at once (default as vLLM: 1024 on H100/H200-class GPUs, else 256)")
	fs.StringVar(&f.maxNumBatchedTokens, "max-num-batched-tokens", "", "token budget of one step, e.g. 8192 or 8k (default as vLLM: 8192 on H100/H200-class GPUs, else 2048)")
	fs.StringVar(&f.maxModelLen, "max-model-len", "", "longest prompt plus output, e.g. 32768 or 32k (default: the model's)")
	fs.IntVar(&f.blockSize, "block-size", replica.DefaultBlockSize, "tokens per KV-cache block")
	fs.BoolVar(&f.enablePrefix, "enable-prefix-caching", true, "reuse KV blocks of shared prompt prefixes")
	fs.BoolVar(&f.noEnablePrefix, "no-enable-prefix-caching", false, "turn automatic prefix caching off")
	fs.Float64Var(&f.gpuMemoryUtil, "gpu-memory-utilization", 0.92, "fraction of GPU memory for weights, activations and the KV cache")
	fs.StringVar(&f.kvCacheMemoryBytes, "kv-cache-memory-bytes", "", "KV-cache size per GPU, e.g. 8G; overrides --gpu-memory-utilization")
	fs.StringVar(&f.apiKey, "api-key", "", "require this bearer token on the API (default: $VLLM_API_KEY)")
	fs.BoolVar(&f.disableLogStats, "disable-log-stats", false, "export no vllm: engine metrics, as vLLM")
	fs.StringVar(&f.showHidden, "show-hidden-metrics-for-version", "", "also export the metrics vLLM of this version (e.g. 0.10) exported that vLLM 0.30 has dropped, such as vllm:gpu_cache_usage_perc")
	fs.IntVar(&f.maxQueued, "max-num-queued-reqs", replica.DefaultMaxQueuedRequests, "waiting requests beyond which new ones get 503 (vLLM 0.32's flag; same as --max-queued-requests)")
	fs.IntVar(&f.maxQueued, "max-queued-requests", replica.DefaultMaxQueuedRequests, "waiting requests beyond which new ones get 503")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long in-flight requests may take to finish")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	f.obs.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	fs.Visit(func(fl *flag.Flag) { f.blockSizeSet = f.blockSizeSet || fl.Name == "block-size" })
	if fs.NArg() > 0 {
		// vLLM's 'vllm serve MODEL' form.
		if f.model != "" || fs.NArg() > 1 {
			return nil, fmt.Errorf("serve takes at most one model, got %q", fs.Args())
		}
		f.model = fs.Arg(0)
	}
	if f.apiKey == "" {
		f.apiKey = os.Getenv("VLLM_API_KEY")
	}
	if err := f.obs.resolve(os.Getenv); err != nil {
		return nil, err
	}
	return f, nil
}

// parseCount reads 8192, 8k, 32K, 2m or 8G as vLLM's human-readable
// integers do: lower-case suffixes are decimal (k = 1000), upper-case ones
// binary (K = 1024). Empty gives def.
func parseCount(s string, def int) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	mult := 1.0
	switch s[len(s)-1] {
	case 'k':
		mult = 1e3
	case 'm':
		mult = 1e6
	case 'g':
		mult = 1e9
	case 'K':
		mult = 1 << 10
	case 'M':
		mult = 1 << 20
	case 'G':
		mult = 1 << 30
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v*mult > 1<<50 {
		return 0, fmt.Errorf("not a count: %q", s)
	}
	return int(v * mult), nil
}

func parseLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
