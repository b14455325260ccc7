// Package replica assembles one glassbox instance from one Config: an
// executor (a GGUF model on this CPU, or the simulated GPU), the engine,
// vLLM's metrics and the OpenAI-compatible HTTP API. glassbox serve and the
// public glassbox package both build through it, so the two cannot drift.
// It does not listen or read flags or the environment: callers serve its
// handlers where they like.
package replica

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
	"github.com/glassbox-llm/glassbox/internal/executor/cpu"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/grammar"
	"github.com/glassbox-llm/glassbox/internal/jinja"
	"github.com/glassbox-llm/glassbox/internal/live"
	"github.com/glassbox-llm/glassbox/internal/metrics"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/server"
	"github.com/glassbox-llm/glassbox/internal/speculative"
	"github.com/glassbox-llm/glassbox/internal/toolcall"
)

// Defaults of the settings every backend shares (vLLM's).
const (
	DefaultBlockSize         = 16
	DefaultMaxQueuedRequests = 10000
)

// The step watchdog's defaults (Config.StepTimeout 0): vLLM's
// VLLM_ENGINE_ITERATION_TIMEOUT_S on a GPU and the simulator; on the CPU,
// where one chunked-prefill step of a large model on a few cores takes
// minutes, long enough for that and still short of forever: the CPU
// executor's own (its Spec.StepTimeout), named here, not copied.
const (
	DefaultStepTimeout    = 60 * time.Second
	DefaultCPUStepTimeout = cpu.DefaultStepTimeout
)

// Config is everything one replica is built from, named after vLLM's flags.
// Zero MaxNumSeqs, MaxNumBatchedTokens and MaxModelLen take the backend's
// defaults, as vLLM's unset flags do; BlockSize and MaxQueuedRequests must
// be set (see the defaults above).
type Config struct {
	// Model is a local GGUF file to run; empty runs Sim.
	Model string
	// Device runs Model on "cuda" (an NVIDIA GPU), "cpu", or "auto"
	// (empty too): the GPU when its driver loads and it runs the model,
	// else the CPU, saying why in Note.
	Device string
	// CUDA is how to open the GPU: which one, and cuBLASLt's file.
	CUDA CUDAConfig
	// EnforceEager runs every GPU step kernel by kernel, with no CUDA
	// graphs (vLLM's --enforce-eager).
	EnforceEager bool
	Tokenizer    string // a tokenizer.json to use instead of the GGUF's
	MMap         bool
	Threads      int
	Sim          sim.Config

	MaxNumSeqs          int
	MaxNumBatchedTokens int
	MaxModelLen         int
	BlockSize           int
	// UserSpecifiedBlockSize says BlockSize was asked for rather than
	// defaulted (cache_config_info reports it).
	UserSpecifiedBlockSize bool
	NoPrefixCaching        bool
	// Speculative is --speculative-config, parsed (the zero value: off).
	Speculative speculative.Config
	// AsyncScheduling overlaps the host's per-step work with the GPU's
	// (vLLM's --async-scheduling); the simulator only.
	AsyncScheduling      bool
	GPUMemoryUtilization float64 // 0: 0.92 on the simulator, vLLM's 0.9 on a GPU
	KVCacheMemoryBytes   int64
	KVCacheDtype         string // --kv-cache-dtype: auto (fp16 on the CPU, the model's on the simulator), fp16 or fp32 (the CPU), fp8 (the simulator)
	Quantization         string // --quantization: fp8 on the simulator's Hopper profiles; refused on the CPU
	MaxQueuedRequests    int
	// ToolCallParser reads tool_choice auto's tool calls (--tool-call-parser);
	// empty takes the one the chat template calls for.
	// EnableAutoToolChoice (--enable-auto-tool-choice) requires that there is one.
	ToolCallParser       string
	EnableAutoToolChoice bool
	// ResponsesStore is how many Responses API responses are kept
	// (--responses-store-size; 0: none).
	ResponsesStore int

	// ServedModelNames are the names clients use; empty means the sim
	// model's name or Model's path.
	ServedModelNames []string
	APIKey           string
	DisableLogStats  bool
	// DisableGlassboxMetrics exports exactly what vLLM exports: no
	// glassbox_* or Go runtime families on /metrics.
	DisableGlassboxMetrics bool
	// ShowHiddenMetricsForVersion also exports the families vLLM of that
	// version exported and 0.30 no longer does (vLLM's flag).
	ShowHiddenMetricsForVersion string
	Version                     string
	Logger                      *slog.Logger

	// Registerer receives the metrics and Gatherer serves them; both nil
	// gives the replica its own registry with Go and process collectors.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer

	// Observers see the engine's events after the metrics (tracing, the
	// profiler); RecordPhases records each request's phases for them.
	Observers    []engine.Observer
	RecordPhases bool
	Profiler     server.Profiler // nil: no /start_profile
	// Thresholds are the doctor's on /dashboard; zero is the defaults.
	Thresholds doctor.Thresholds
	// Profiling reports whether the profiler records, so that an
	// executor that times its kernels does so meanwhile (nil: never).
	Profiling func() bool

	// DCGM also builds a dcgm-exporter (DCGMHandler), labelled with
	// Hostname: the simulated GPUs' under the simulator, averaging over
	// DCGMWindow; the GPU's own under the CUDA executor, read from NVML
	// every DCGMWindow (0: one second). The CPU executor refuses it.
	DCGM       bool
	DCGMWindow time.Duration
	Hostname   string

	// Clock is the engine's and the simulator's time; nil means the wall
	// clock.
	Clock engine.Clock

	// StepTimeout is the engine's watchdog (--step-timeout): a step that
	// runs longer kills the engine (engine.DeathStepTimeout). 0 takes the
	// executor's default on the wall clock (DefaultStepTimeout,
	// DefaultCPUStepTimeout) and none on a Clock of the caller's (virtual
	// time); negative turns it off.
	StepTimeout time.Duration

	// LoRA, when set, serves LoRA adapters as model names
	// (--enable-lora): on the simulator only.
	LoRA *LoRA

	// KVOffloadingSize is --kv-offloading-size: GiB of host memory for a
	// CPU KV offload tier, summed over the tensor-parallel ranks as
	// vLLM's (0: none); KVOffloadingBackend is its backend, "native" (or
	// empty). The simulator only.
	KVOffloadingSize    float64
	KVOffloadingBackend string
	// KVCacheMetrics and KVCacheMetricsSample are --kv-cache-metrics and
	// --kv-cache-metrics-sample: the residency histograms.
	KVCacheMetrics       bool
	KVCacheMetricsSample float64

	// DataParallelSize is --data-parallel-size: engine ranks behind the
	// one API, each a copy of the model on its own GPUs with its own KV
	// cache and scheduler, balanced as vLLM's API server does (0 or 1:
	// one). The simulator only.
	DataParallelSize int
	// DataParallelRank makes this replica rank k of a data-parallel
	// server whose other ranks the caller builds, each a replica of its
	// own on one registry (glassbox simulate steps each on its own
	// clock): its metrics carry engine k and, after the first, none of the
	// API server's families.
	DataParallelRank int
}

// LoRA is --enable-lora's set-up: the adapters (--lora-modules), the most
// one step runs (--max-loras) and their rank (--max-lora-rank).
type LoRA struct {
	Modules  []server.LoRAModule
	MaxLoRAs int
	MaxRank  int
}

// Replica is a built instance. Start runs its engine; Close stops it.
type Replica struct {
	// Engine is the first rank; Ranks all of them (one without data
	// parallelism), API what the server submits to (Engine itself, or the
	// ranks' balancer).
	Engine       *engine.Engine
	Ranks        []*engine.Engine
	API          server.Engine
	EngineConfig engine.Config
	Names        []string // served model names, the first the default
	Describe     string   // what runs it, for a start-up banner
	// Memory is how a GPU's memory is split (weights, step buffers, KV
	// cache), for the banner; empty elsewhere.
	Memory string
	// Note says why Device auto runs on the CPU; empty otherwise.
	Note string
	// DCGM says what the dcgm-exporter serves (Config.DCGM); empty
	// without one.
	DCGM string
	// Tokenizer is the served model's tokenizer as the API uses it
	// (completion prompts get the model's BOS), for callers that submit
	// to Engine themselves: the public package.
	Tokenizer server.Model
	// Grammars compiles structured outputs over the model's vocabulary,
	// for the API and the public package alike.
	Grammars *grammar.Cache
	// ToolParser is how tool_choice auto's calls are read ("": refused).
	ToolParser string

	handler, metrics, dcgm, dash http.Handler
	rejected                     func(reason string) // counts a 503 refused at admission
	gather                       prometheus.Gatherer // what metrics serves: hidden families added, glassbox's dropped as configured
	page                         *live.Page
	life                         executor.Lifecycle  // the executor's, closed after the engine stops
	stopCounters                 func()              // a real GPU's dcgm-exporter; nil otherwise
	chat                         server.ChatRenderer // nil: ChatML
	log                          *slog.Logger
	stop                         context.CancelFunc
	done                         chan struct{}
}

// New builds a replica; on error everything built so far is released.
func New(cfg Config) (*Replica, error) {
	wall := prepare(&cfg)
	if err := checkSpeculative(&cfg); err != nil {
		return nil, err
	}
	ecfg := features(&cfg)
	x, err := chooseExecutor(&cfg, &ecfg)
	if err != nil {
		return nil, err
	}
	return assemble(cfg, ecfg, x, wall)
}

// prepare fills in the logger and the clock; wall says the clock is the
// wall clock, not a caller's.
func prepare(cfg *Config) (wall bool) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	wall = cfg.Clock == nil
	if wall {
		cfg.Clock = engine.WallClock()
	}
	return wall
}

// assemble builds the replica around a loaded executor: the KV cache
// sized, the executor started, then the metrics, the engine (ecfg, the
// features asked, completed) and the API around it. On error the
// executor is closed.
func assemble(cfg Config, ecfg engine.Config, x *chosen, wall bool) (r *Replica, err error) {
	life, spec, note := x.life, x.spec, x.note
	var stopCounters func()
	defer func() {
		if err != nil {
			if stopCounters != nil {
				stopCounters()
			}
			life.Close()
		}
	}()
	if err := engineConfig(&ecfg, &cfg, spec, life); err != nil {
		return nil, err
	}
	ecfg.StepTimeout = stepTimeout(cfg.StepTimeout, cmp.Or(spec.StepTimeout, DefaultStepTimeout), wall)
	started, err := life.Start(ecfg.NumBlocks)
	if err != nil {
		return nil, err
	}
	describe, info := spec.Describe, map[string]string{}
	if started.Describe != "" {
		describe += "; " + started.Describe
	}
	maps.Copy(info, spec.Info)
	maps.Copy(info, started.Info) // what Start chose replaces what Load said
	names := cfg.ServedModelNames
	if len(names) == 0 {
		names = []string{spec.Name}
	}
	reg, gather := cfg.Registerer, cfg.Gatherer
	if reg == nil && gather == nil {
		own := prometheus.NewRegistry()
		own.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg, gather = own, own
	}
	var hidden []metricspec.Deprecated
	if cfg.ShowHiddenMetricsForVersion != "" {
		if hidden, err = metricspec.HiddenFor(cfg.ShowHiddenMetricsForVersion); err != nil {
			return nil, fmt.Errorf("show hidden metrics: %w", err)
		}
	}
	parser := cmp.Or(cfg.ToolCallParser, templateParser(spec.Chat))
	switch {
	case parser != "":
		if err := toolcall.Check(parser); err != nil {
			return nil, fmt.Errorf("--tool-call-parser: %w", err)
		}
	case cfg.EnableAutoToolChoice:
		return nil, fmt.Errorf("--enable-auto-tool-choice needs --tool-call-parser (%s): the model's chat template shows no tool format glassbox reads", strings.Join(toolcall.Parsers(), ", "))
	}
	if err := checkDataParallel(&cfg, life); err != nil {
		return nil, err
	}
	var eng *engine.Engine
	mcfg := metrics.Config{
		ModelName: names[0], Engine: strconv.Itoa(cfg.DataParallelRank), NoFrontend: cfg.DataParallelRank > 0,
		MaxModelLen: ecfg.MaxModelLen, DisableLogStats: cfg.DisableLogStats,
		Cache: metricspec.CacheConfig{BlockSize: ecfg.BlockSize, UserSpecifiedBlockSize: cfg.UserSpecifiedBlockSize,
			NumGPUBlocks: ecfg.NumBlocks, MaxModelLen: ecfg.MaxModelLen, EnablePrefixCaching: ecfg.EnablePrefixCaching,
			GPUMemoryUtilization: cfg.GPUMemoryUtilization, CacheDtype: spec.CacheDtype,
			KVCacheMemoryBytes: cfg.KVCacheMemoryBytes, PrefixCachingHashAlgo: "sha256", KVOffloadingSize: cfg.KVOffloadingSize},
		SchedulerInfo: map[string]string{
			"max_num_seqs": strconv.Itoa(ecfg.MaxNumSeqs), "max_num_batched_tokens": strconv.Itoa(ecfg.MaxNumBatchedTokens),
			"max_model_len": strconv.Itoa(ecfg.MaxModelLen), "async_scheduling": metricspec.PythonBool(cfg.AsyncScheduling),
		},
		ExecutorInfo: info, PeakFLOPs: spec.PeakFLOPs, PeakBandwidth: spec.PeakBandwidth,
		NumSpeculativeTokens: cfg.Speculative.NumSpeculativeTokens,
		Stats:                func() engine.Stats { return eng.Stats() },
		MaxLoRAs:             ecfg.MaxLoRAs,
		Offload:              ecfg.Offload.Enabled(), KVCacheMetrics: ecfg.KVCacheMetrics,
	}
	m, err := metrics.New(mcfg, reg)
	if err != nil {
		return nil, err
	}
	observers := cfg.Observers
	var dcgmHandler http.Handler
	var dcgmLine string
	if cfg.DCGM {
		c, err := newCounters(&cfg, spec.GPU, note)
		if err != nil {
			return nil, err
		}
		if c.observer != nil {
			observers = append([]engine.Observer{c.observer}, observers...)
		}
		dcgmHandler, dcgmLine, stopCounters = c.handler, c.line, c.stop
	}
	var obs engine.Observer = m
	if len(observers) > 0 {
		obs = append(engine.Observers{m}, observers...)
	}
	if eng, err = engine.New(ecfg, started.Executor, obs); err != nil {
		return nil, err
	}
	ranks, api, err := dataParallel(&cfg, life, eng, ecfg, mcfg, reg)
	if err != nil {
		return nil, err
	}
	var mh http.Handler
	if gather != nil {
		gather = metrics.WithHidden(gather, hidden)
		if cfg.DisableGlassboxMetrics {
			gather = metrics.VLLMOnly(gather)
		}
		mh = metrics.Handler(gather)
	}
	if n := len(ranks); n > 1 {
		describe += fmt.Sprintf(", %d data-parallel ranks", n)
	}
	var chat server.ChatRenderer // nil: ChatML
	if spec.Chat != nil {
		chat = spec.Chat
	}
	r = &Replica{Engine: eng, Ranks: ranks, API: api, EngineConfig: ecfg, Names: names, Describe: describe, Memory: started.Memory, Note: note, DCGM: dcgmLine,
		Tokenizer: spec.Vocab, Grammars: server.NewGrammars(spec.Vocab, ecfg.EOS), ToolParser: parser, metrics: mh, gather: gather,
		life: life, stopCounters: stopCounters, chat: chat, log: cfg.Logger, rejected: m.Rejected, dcgm: dcgmHandler}
	var dash http.Handler
	if mh != nil {
		if r.page, err = live.New(live.Config{Targets: []live.Target{r.liveTarget(names[0], cfg.APIKey)}, Now: cfg.Clock.Now, Thresholds: cfg.Thresholds}); err != nil {
			return nil, err
		}
		dash = r.page.Handler("/dashboard")
		r.dash = dash
	}
	var adapters []server.LoRAModule
	if cfg.LoRA != nil {
		adapters = cfg.LoRA.Modules
	}
	var emb *server.Embeddings
	if e := spec.Embeddings; e != nil {
		emb = &server.Embeddings{Dim: e.Dim, Pooling: e.Pooling, Truncatable: e.Truncatable}
	}
	srv := server.New(server.Config{
		ServedModelNames: names, APIKey: cfg.APIKey, Version: cfg.Version, Logger: cfg.Logger, LoRA: adapters,
		Metrics: mh, Instrument: m.InstrumentHTTP, Rejected: m.Rejected, Chat: chat, Profiler: cfg.Profiler, Dashboard: dash,
		Grammars: r.Grammars, ToolParser: parser, Embeddings: emb, ResponsesStore: cfg.ResponsesStore,
	}, api, spec.Vocab)
	r.handler = srv.Handler()
	return r, nil
}

// liveTarget reads the replica for its live page in process: /metrics
// (with the dcgm-exporter's series appended) and /debug/engine.
func (r *Replica) liveTarget(name, apiKey string) live.Target {
	get := func(h http.Handler, path string) ([]byte, error) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+apiKey)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %d %s", path, rec.Code, strings.TrimSpace(rec.Body.String()))
		}
		return rec.Body.Bytes(), nil
	}
	return live.Target{Name: name,
		Read: func(context.Context) ([]byte, error) {
			b, err := get(r.metrics, "/metrics")
			if err != nil || r.dcgm == nil {
				return b, err
			}
			d, err := get(r.dcgm, "/metrics")
			if err != nil {
				return b, nil
			}
			return append(append(b, '\n'), d...), nil
		},
		Engine: func(context.Context) ([]byte, error) { return get(r.handler, "/debug/engine") }}
}

// DashboardHandler is the live page (with its data behind Credentials on
// the metrics port), or nil without metrics.
func (r *Replica) DashboardHandler() http.Handler { return r.dash }

// ChatPrompt renders a conversation as the chat API does (the model's
// template; ChatML on the simulator, which has none) and tokenizes it.
func (r *Replica) ChatPrompt(msgs []jinja.Message) (text string, ids []int, err error) {
	if text, err = server.RenderChat(r.chat, msgs, nil); err != nil {
		return "", nil, err
	}
	return text, server.EncodeChat(r.Tokenizer, text), nil
}

// Handler is the OpenAI-compatible API (and /metrics, /health, …).
func (r *Replica) Handler() http.Handler { return r.handler }

// Rejected counts a request refused before it reached Handler (a 503 of
// the server's --limit-concurrency guard) in vllm:admission_rejections_total,
// with one of metricspec's Reject reasons.
func (r *Replica) Rejected(reason string) { r.rejected(reason) }

// MetricsHandler serves the metrics in vLLM's text format, or is nil when
// the caller gave a Registerer without a Gatherer.
func (r *Replica) MetricsHandler() http.Handler { return r.metrics }

// DCGMHandler serves the dcgm-exporter's series (the simulated GPUs', or
// the GPU's own from NVML), or is nil without Config.DCGM.
func (r *Replica) DCGMHandler() http.Handler { return r.dcgm }

// Start runs the engine goroutine until Close.
func (r *Replica) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.stop, r.done = cancel, make(chan struct{})
	pageDone := make(chan struct{})
	go func() {
		if r.page != nil {
			r.page.Run(ctx)
		}
		close(pageDone)
	}()
	var ranks sync.WaitGroup
	for _, e := range r.Ranks {
		ranks.Go(func() { e.Run(ctx) })
	}
	go func() { ranks.Wait(); <-pageDone; close(r.done) }()
}

// Close stops the engine, aborting what is in flight, and releases the
// executor's threads and the model's memory (its lifecycle's Close). Call it once, after the HTTP
// side has drained. After a hung step (engine.DeathStepTimeout) the
// executor is still inside that call: Close leaves it, its threads and its
// memory (a GPU context's too) to the process's exit rather than free
// what the call may yet touch, or wait for it for ever.
func (r *Replica) Close() {
	if r.stop != nil {
		r.stop()
		<-r.done
	}
	for _, e := range r.Ranks {
		var d *engine.DeadError
		if errors.As(e.Health(), &d) && d.Reason == engine.DeathStepTimeout {
			r.log.Warn("the executor is left as it is: a step is still hung in it; its threads and memory go with the process", "err", d.Err)
			return
		}
	}
	if r.stopCounters != nil {
		r.stopCounters()
	}
	r.life.Close()
}

// Gatherer is what /metrics serves, after --show-hidden-metrics-for-version
// and --disable-glassbox-metrics; nil when the caller's Registerer is not
// a Gatherer.
func (r *Replica) Gatherer() prometheus.Gatherer { return r.gather }

// DescribeSizes is the start-up banner's line about the engine's sizes.
func (r *Replica) DescribeSizes() string {
	c := r.EngineConfig
	s := fmt.Sprintf("KV cache: %d blocks of %d tokens (%d tokens); max-model-len %d, max-num-seqs %d, max-num-batched-tokens %d, prefix caching %v",
		c.NumBlocks, c.BlockSize, c.NumBlocks*c.BlockSize, c.MaxModelLen, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.EnablePrefixCaching)
	if o := c.Offload; o.Enabled() {
		s += fmt.Sprintf("; KV offload: %d host blocks (%.1f GiB) at %.0f GB/s", o.Blocks, float64(int64(o.Blocks)*o.BlockBytes)/(1<<30), o.Bandwidth/1e9)
	}
	return s
}
