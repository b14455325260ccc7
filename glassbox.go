package glassbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/hub"
	"github.com/glassbox-llm/glassbox/internal/replica"
)

// Errors a caller may branch on, with errors.Is.
var (
	// ErrPromptTooLong: a prompt plus SamplingParams.MaxTokens does not fit
	// in the context (Options.MaxModelLen).
	ErrPromptTooLong = engine.ErrPromptTooLong
	// ErrOverloaded: the engine's queue is full (Stream only: Generate and
	// Chat wait for room instead).
	ErrOverloaded = engine.ErrOverloaded
	// ErrClosed: the LLM was closed before or during the call.
	ErrClosed = errors.New("the LLM is closed")
	// ErrEngineDead: the engine stopped because its executor failed for
	// good (a sticky device fault, a step past Options.StepTimeout, a
	// panicking kernel): the calls in flight and every later one fail
	// with an error naming the reason, and Health returns it. Close the
	// LLM and open another (or restart the process).
	ErrEngineDead = engine.ErrEngineDead
)

// Options says what to run and how, with vLLM's names for vLLM's knobs
// (LLM(model=…, max_num_seqs=…, …)). The zero value of every field but
// Model and Sim is a sane default.
type Options struct {
	// Model is a GGUF file to run on this CPU (llama, mistral, qwen2,
	// qwen3; F32/F16/BF16 and the common quantizations), or
	// hf://OWNER/REPO/FILE to download one first. Exactly one of Model and
	// Sim must be set.
	Model string
	// Device runs Model on "cpu" (empty too), "cuda" (an NVIDIA GPU:
	// F32/F16/BF16/Q8_0 weights) or "auto" (the GPU when its driver loads
	// and it runs the model, else the CPU), as serve's --device.
	Device string
	// Tokenizer is a tokenizer.json, or a directory holding one, to use
	// instead of the GGUF's own (vLLM's tokenizer).
	Tokenizer string
	// Threads are the CPU executor's compute threads; 0 means one per CPU.
	Threads int
	// MMap maps the model file instead of reading it into memory: a faster
	// start, a slower decode. Large files are mapped anyway.
	MMap bool

	// Sim runs the simulated GPU instead of a model: the same engine,
	// with each step timed by a roofline cost model and English-like
	// tokens, deterministic for a given prompt and seed. It has no chat
	// template: Chat uses ChatML.
	Sim *SimOptions

	// DownloadDir is where hf:// models are cached; empty means glassbox/hf
	// under os.UserCacheDir, the cache glassbox serve uses.
	DownloadDir string
	// HFToken is sent to the hub as a bearer token (gated repositories);
	// HFEndpoint replaces https://huggingface.co; DownloadProgress, when
	// set, receives a progress line as a download runs.
	HFToken          string
	HFEndpoint       string
	DownloadProgress io.Writer

	// MaxNumSeqs bounds the sequences running at once; 0 means 64 on the
	// CPU and vLLM's default for the simulated GPU (1024 on an H200).
	MaxNumSeqs int
	// MaxNumBatchedTokens is each step's token budget (chunked prefill);
	// 0 means 2048 on the CPU and vLLM's default on the simulated GPU.
	MaxNumBatchedTokens int
	// MaxModelLen is the context, prompt plus output; 0 means the model's.
	MaxModelLen int
	// BlockSize is the tokens per KV cache block; 0 means 16.
	BlockSize int
	// EnablePrefixCaching shares the KV blocks of common prompt prefixes
	// between requests; nil means on (vLLM's default), new(false) off.
	EnablePrefixCaching *bool
	// KVCacheMemoryBytes sizes the KV cache; 0 means room for MaxNumSeqs
	// full-length sequences on the CPU (at most a quarter of free memory
	// and 4 GiB), and GPUMemoryUtilization of the GPU's memory, less the
	// weights, on the simulator.
	KVCacheMemoryBytes int64
	// GPUMemoryUtilization is the simulated GPU's share of memory for the
	// model and the KV cache; 0 means 0.92.
	GPUMemoryUtilization float64

	// ServedModelNames are the names Handler's clients may ask for; empty
	// means Model as given, or the simulated model's name.
	ServedModelNames []string
	// APIKey, when set, is required by Handler as a bearer token on every
	// route but /health and /ready.
	APIKey string
	// Registerer receives vLLM's metrics (vllm:*) and glassbox's own
	// (glassbox_*); nil keeps them in a registry of the LLM's own, served by
	// Handler at /metrics. When Registerer is also a prometheus.Gatherer
	// (a *prometheus.Registry is), Handler serves it at /metrics too. One
	// LLM per registry: a second would register the same series.
	Registerer prometheus.Registerer
	// Logger receives the engine's and the server's logs; nil discards them.
	Logger *slog.Logger
	// StepTimeout is the engine's watchdog: a step running longer kills
	// the engine (ErrEngineDead); 0 means 60 s (vLLM's
	// VLLM_ENGINE_ITERATION_TIMEOUT_S) on the GPU and the simulator and
	// 30 minutes on the CPU, negative turns it off.
	StepTimeout time.Duration

	// Test seams: observers see the engine's events after the metrics;
	// maxQueued, when set, bounds the engine's queue.
	observers []engine.Observer
	maxQueued int
}

// SimOptions select the simulated GPU. The zero value is Llama-3.1-8B on
// one H200, never waiting out the simulated step times.
type SimOptions struct {
	// Hardware is the GPU profile: h200 (default), h100, a100-80g, l40s.
	Hardware string
	// Model is the model profile: llama-3.1-8b (default), llama-3.1-70b,
	// qwen2.5-7b, qwen2.5-0.5b.
	Model string
	// TensorParallelSize is the number of GPUs the model is split over;
	// 0 means 1.
	TensorParallelSize int
	// TimeScale multiplies each simulated step's duration, which the engine
	// then waits out: 1 is real time (as glassbox serve), 0.1 ten times
	// faster, 0 never waits.
	TimeScale float64
}

// LLM is one loaded model and its engine. Its methods are safe for
// concurrent use: calls share the engine, which batches them together.
type LLM struct {
	rep         *replica.Replica
	maxModelLen int
	calls       atomic.Uint64 // numbers each call's request ids

	// base is cancelled by Close, which ends every running call.
	base   context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup // calls in flight, which Close waits for
}

// Open loads the model (downloading an hf:// one first, which ctx bounds),
// sizes the KV cache and starts the engine. Close releases them.
func Open(ctx context.Context, opts Options) (*LLM, error) {
	cfg, err := replicaConfig(ctx, &opts)
	if err != nil {
		return nil, err
	}
	r, err := replica.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", cmp.Or(opts.Model, "the simulated GPU"), err)
	}
	r.Start()
	l := &LLM{rep: r, maxModelLen: r.EngineConfig.MaxModelLen}
	l.base, l.cancel = context.WithCancel(context.Background())
	return l, nil
}

// replicaConfig turns the options into the replica's configuration,
// resolving an hf:// model to its downloaded file.
func replicaConfig(ctx context.Context, o *Options) (replica.Config, error) {
	cfg := replica.Config{
		Tokenizer: o.Tokenizer, MMap: o.MMap, Threads: o.Threads, Device: cmp.Or(o.Device, "cpu"),
		MaxNumSeqs: o.MaxNumSeqs, MaxNumBatchedTokens: o.MaxNumBatchedTokens, MaxModelLen: o.MaxModelLen,
		BlockSize: cmp.Or(o.BlockSize, replica.DefaultBlockSize), UserSpecifiedBlockSize: o.BlockSize != 0,
		NoPrefixCaching:      o.EnablePrefixCaching != nil && !*o.EnablePrefixCaching,
		KVCacheMemoryBytes:   o.KVCacheMemoryBytes,
		GPUMemoryUtilization: o.GPUMemoryUtilization,
		MaxQueuedRequests:    cmp.Or(o.maxQueued, replica.DefaultMaxQueuedRequests),
		ServedModelNames:     o.ServedModelNames,
		APIKey:               o.APIKey,
		Version:              moduleVersion(),
		Logger:               o.Logger,
		Registerer:           o.Registerer,
		Observers:            o.observers,
		StepTimeout:          o.StepTimeout,
	}
	if g, ok := o.Registerer.(prometheus.Gatherer); ok {
		cfg.Gatherer = g
	}
	switch {
	case o.Model == "" && o.Sim == nil:
		return cfg, errors.New("open: Options.Model is empty: name a GGUF file or an hf:// reference, or set Options.Sim for the simulated GPU")
	case o.Model != "" && o.Sim != nil:
		return cfg, fmt.Errorf("open %s: Options.Model and Options.Sim are both set: choose one", o.Model)
	case o.Sim != nil:
		cfg.Sim = sim.Config{Hardware: cmp.Or(o.Sim.Hardware, "h200"), Model: cmp.Or(o.Sim.Model, "llama-3.1-8b"),
			TensorParallel: o.Sim.TensorParallelSize, TimeScale: o.Sim.TimeScale}
		return cfg, nil
	}
	if len(cfg.ServedModelNames) == 0 {
		cfg.ServedModelNames = []string{o.Model} // as vLLM serves its --model argument
	}
	path, err := resolveModel(ctx, o)
	if err != nil {
		return cfg, err
	}
	cfg.Model = path
	return cfg, nil
}

// resolveModel is the local path of Options.Model, downloaded first when
// it is an hf:// reference.
func resolveModel(ctx context.Context, o *Options) (string, error) {
	if !strings.HasPrefix(o.Model, hub.Prefix) {
		return o.Model, nil
	}
	ref, err := hub.ParseRef(o.Model)
	if err != nil {
		return "", fmt.Errorf("open: %w", err)
	}
	dir := o.DownloadDir
	if dir == "" {
		if dir, err = hub.DefaultCacheDir(); err != nil {
			return "", fmt.Errorf("open %s: %w (set Options.DownloadDir)", o.Model, err)
		}
	}
	c := hub.Config{BaseURL: o.HFEndpoint, CacheDir: dir, Token: o.HFToken, Progress: o.DownloadProgress}
	path, err := c.Fetch(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("open: %w", err)
	}
	return path, nil
}

const modulePath = "github.com/glassbox-llm/glassbox"

// moduleVersion is this module's version in the running program, for
// Handler's /version.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == modulePath {
			return bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				return d.Version
			}
		}
	}
	return "(devel)"
}

// Handler is the OpenAI-compatible API over the same engine, to mount in
// your own server: /v1/completions, /v1/chat/completions (streaming or
// not; structured outputs and tool calls), /v1/embeddings (embedding
// models and the simulator), /v1/models, /tokenize, /detokenize, /health, /ready, /version,
// /debug/engine, and /metrics when the LLM has a registry of its own or
// Options.Registerer is a Gatherer. Shut the http.Server down before
// calling Close.
func (l *LLM) Handler() http.Handler { return l.rep.Handler() }

// Health is nil while the engine serves, and an error naming why it
// stopped (it matches ErrEngineDead) once its executor died; Handler's
// /health answers 503 with it then. It does not wait for the engine.
func (l *LLM) Health() error { return l.rep.API.Health() }

// Close cancels every running Generate, Chat and Stream call (they return
// ErrClosed), waits for them, then stops the engine and releases the
// compute threads, the model's memory or mapping and the KV cache. Later
// calls fail with ErrClosed. Close is idempotent and returns nil; it
// must not be called from inside a Stream loop, which it would wait for.
func (l *LLM) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.cancel()
	l.running.Wait()
	l.rep.Close()
	return nil
}

// begin admits a call, which must end with l.running.Done; it fails once
// Close has begun.
func (l *LLM) begin() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.running.Add(1)
	return nil
}

// callContext is ctx, also cancelled with the cause ErrClosed by Close.
func (l *LLM) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(l.base, func() { cancel(ErrClosed) })
	return ctx, func() { stop(); cancel(nil) }
}
