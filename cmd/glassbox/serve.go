package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/metrics"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/server"
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
	maxQueued           int
	threads             int
	mmap                bool
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
	fs.BoolVar(&f.mmap, "mmap", false, "map the GGUF file instead of reading it into (huge-page) memory: starts faster and shares the page cache, decodes slower")
	fs.StringVar(&f.servedModelName, "served-model-name", "", "model name(s) clients use, comma-separated (default: the model)")
	fs.StringVar(&f.simHardware, "sim-hardware", "h200", "simulated GPU: "+strings.Join(sim.HardwareNames(), ", "))
	fs.StringVar(&f.simModel, "sim-model", "llama-3.1-8b", "simulated model: "+strings.Join(sim.ModelNames(), ", "))
	fs.IntVar(&f.tensorParallel, "tensor-parallel-size", 1, "GPUs the simulated model is split over")
	fs.Float64Var(&f.simTimeScale, "sim-time-scale", 1, "simulated step time multiplier: 1 is real time, 0.1 is ten times faster, 0 never waits")
	fs.IntVar(&f.maxNumSeqs, "max-num-seqs", 0, "most sequences running at once (default as vLLM: 1024 on H100/H200-class GPUs, else 256)")
	fs.StringVar(&f.maxNumBatchedTokens, "max-num-batched-tokens", "", "token budget of one step, e.g. 8192 or 8k (default as vLLM: 8192 on H100/H200-class GPUs, else 2048)")
	fs.StringVar(&f.maxModelLen, "max-model-len", "", "longest prompt plus output, e.g. 32768 or 32k (default: the model's)")
	fs.IntVar(&f.blockSize, "block-size", 16, "tokens per KV-cache block")
	fs.BoolVar(&f.enablePrefix, "enable-prefix-caching", true, "reuse KV blocks of shared prompt prefixes")
	fs.BoolVar(&f.noEnablePrefix, "no-enable-prefix-caching", false, "turn automatic prefix caching off")
	fs.Float64Var(&f.gpuMemoryUtil, "gpu-memory-utilization", 0.92, "fraction of GPU memory for weights, activations and the KV cache")
	fs.StringVar(&f.kvCacheMemoryBytes, "kv-cache-memory-bytes", "", "KV-cache size per GPU, e.g. 8G; overrides --gpu-memory-utilization")
	fs.StringVar(&f.apiKey, "api-key", "", "require this bearer token on the API (default: $VLLM_API_KEY)")
	fs.BoolVar(&f.disableLogStats, "disable-log-stats", false, "export no vllm: engine metrics, as vLLM")
	fs.IntVar(&f.maxQueued, "max-queued-requests", 10000, "waiting requests beyond which new ones get 503")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long in-flight requests may take to finish")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	f.obs.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
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

// instance is a running server.
type instance struct {
	addr        string
	metricsAddr string // the --metrics-port listener, or ""
	done        chan error
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	inst, err := startServe(ctx, args, stdout, stderr)
	if err != nil {
		return err
	}
	return <-inst.done
}

// startServe builds everything, starts listening and returns; the server
// runs until ctx is done, then drains and reports on done.
func startServe(ctx context.Context, args []string, stdout, stderr io.Writer) (*instance, error) {
	f, err := parseServeFlags(args, stderr)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: parseLevel(f.logLevel)}))
	w, err := wire(f, log)
	if err != nil {
		return nil, err
	}
	lns, err := listen(f)
	if err != nil {
		w.closeObservers(log)
		return nil, err
	}
	inst := &instance{addr: lns.api.Addr().String(), done: make(chan error, 1)}
	if lns.metrics != nil {
		inst.metricsAddr = lns.metrics.Addr().String()
	}
	printBanner(stdout, f, w, inst.addr)
	printObserveBanner(stdout, f, inst.metricsAddr)

	engCtx, stopEngine := context.WithCancel(context.Background())
	engDone := make(chan struct{})
	go func() { w.engine.Run(engCtx); close(engDone) }()
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	srv := &http.Server{Handler: w.handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lns.api) }()
	var metricsSrv *http.Server
	if lns.metrics != nil {
		metricsSrv = &http.Server{Handler: w.metricsHandler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog}
		go func() { _ = metricsSrv.Serve(lns.metrics) }() // ends with Close below
	}

	go func() {
		var err error
		select {
		case err = <-served:
		case <-ctx.Done():
			log.Info("shutting down: draining in-flight requests", "timeout", f.shutdownTimeout, "running", w.engine.Stats().Running, "waiting", w.engine.Stats().Waiting)
			sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
			if err = srv.Shutdown(sctx); err != nil {
				log.Warn("drain timed out: aborting what is left", "err", err)
				err = nil
			}
			cancel()
		}
		stopEngine() // aborts anything still in flight
		<-engDone
		srv.Close()
		if metricsSrv != nil {
			metricsSrv.Close()
		}
		w.closeObservers(log) // the engine is stopped: flush the last spans, finish a profile
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		inst.done <- err
	}()
	return inst, nil
}

// wiring is everything serve builds from its flags.
type wiring struct {
	engine         *engine.Engine
	back           *backend
	engCfg         engine.Config
	names          []string
	handler        http.Handler
	metricsHandler http.Handler // for the --metrics-port listener
	observe        *observability
}

func wire(f *serveFlags, log *slog.Logger) (*wiring, error) {
	newBackend := simBackend
	if f.model != "" {
		newBackend = cpuBackend
	}
	b, err := newBackend(f, log)
	if err != nil {
		return nil, err
	}
	cfg := engine.Config{
		MaxNumSeqs: f.maxNumSeqs, BlockSize: f.blockSize, MaxWaiting: f.maxQueued,
		EnablePrefixCaching: f.enablePrefix && !f.noEnablePrefix,
		EOS:                 b.eos, Logger: log, RecordPhases: f.obs.detailed,
		MaxNumBatchedTokens: b.maxNumBatchedTokens, MaxModelLen: b.maxModelLen, NumBlocks: b.numBlocks,
	}
	if cfg.MaxNumSeqs == 0 {
		cfg.MaxNumSeqs = b.maxNumSeqs
	}

	names := []string{b.name}
	if f.servedModelName != "" {
		names = strings.Split(f.servedModelName, ",")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var eng *engine.Engine
	m, err := metrics.New(metrics.Config{
		ModelName: names[0], Engine: "0", MaxModelLen: cfg.MaxModelLen, DisableLogStats: f.disableLogStats,
		Cache: metricspec.CacheConfig{BlockSize: cfg.BlockSize, NumGPUBlocks: cfg.NumBlocks,
			EnablePrefixCaching: cfg.EnablePrefixCaching, GPUMemoryUtilization: f.gpuMemoryUtil, CacheDtype: b.cacheDtype,
			KVCacheMemoryBytes: int64(b.kvBytesFlag), PrefixCachingHashAlgo: "sha256"},
		SchedulerInfo: map[string]string{
			"max_num_seqs": strconv.Itoa(cfg.MaxNumSeqs), "max_num_batched_tokens": strconv.Itoa(cfg.MaxNumBatchedTokens),
			"max_model_len": strconv.Itoa(cfg.MaxModelLen),
		},
		ExecutorInfo: b.executorInfo,
		PeakFLOPs:    b.peakFLOPs, PeakBandwidth: b.peakBandwidth,
		Stats: func() engine.Stats { return eng.Stats() },
	}, reg)
	if err != nil {
		return nil, err
	}
	o, err := newObservability(&f.obs, log)
	if err != nil {
		return nil, err
	}
	if eng, err = engine.New(cfg, b.exec, o.observers(m)); err != nil {
		o.close(log)
		return nil, err
	}
	scfg := server.Config{
		ServedModelNames: names, MaxModelLen: cfg.MaxModelLen, APIKey: f.apiKey, Version: version,
		Logger: log, Metrics: metrics.Handler(reg), Instrument: m.InstrumentHTTP, ChatTemplate: b.chatTemplate,
	}
	if o.profiler != nil {
		scfg.Profiler = o.profiler
	}
	srv := server.New(scfg, eng, b.model)
	return &wiring{engine: eng, back: b, engCfg: cfg, names: names, handler: srv.Handler(),
		metricsHandler: o.metricsHandler(metrics.Handler(reg)), observe: o}, nil
}

func printBanner(w io.Writer, f *serveFlags, wr *wiring, addr string) {
	c := wr.engCfg
	fmt.Fprintf(w, "glassbox %s: serving %q on %s\n", version, wr.names[0], wr.back.describe)
	fmt.Fprintf(w, "  KV cache: %d blocks of %d tokens (%d tokens); max-model-len %d, max-num-seqs %d, max-num-batched-tokens %d, prefix caching %v\n",
		c.NumBlocks, c.BlockSize, c.NumBlocks*c.BlockSize, c.MaxModelLen, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.EnablePrefixCaching)
	scheme := "http"
	if f.obs.sslCertfile != "" {
		scheme = "https"
	}
	fmt.Fprintf(w, "  listening on %s://%s  (OpenAI API under /v1, metrics at /metrics)\n", scheme, addr)
	fmt.Fprintf(w, "  try: curl %s://%s/v1/completions -H 'Content-Type: application/json' -d '{\"model\":%q,\"prompt\":\"Hello\",\"max_tokens\":32}'\n", scheme, addr, wr.names[0])
	if f.model == "" {
		fmt.Fprintf(w, "  other profiles: --sim-hardware %s --sim-model %s --tensor-parallel-size N\n",
			strings.Join(sim.HardwareNames(), "|"), strings.Join(sim.ModelNames(), "|"))
		fmt.Fprintln(w, "  a real model on this CPU: --model PATH.gguf (llama, qwen2, qwen3; F32/F16/BF16/Q8_0/Q4_0/Q5_0/Q4_K/Q5_K/Q6_K)")
	}
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
