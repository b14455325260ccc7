// Package engine owns the serving loop: one goroutine that admits requests,
// asks sched for each step's batch, runs it on an Executor, delivers outputs
// to each request's Stream and reports step and request events to an Observer.
//
// Only the engine goroutine touches scheduling state; everyone else talks to
// it through Submit, Abort, Stats and their own Stream. It must not import
// net/http, Prometheus, OpenTelemetry, or the server, metrics, tracing or
// executor packages: those depend on it, not the other way round.
package engine

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// Errors a caller branches on.
var (
	ErrOverloaded    = errors.New("engine queue is full")
	ErrPromptTooLong = errors.New("prompt is longer than the model's context")
	ErrClosed        = errors.New("engine is shut down")
	ErrDuplicateID   = errors.New("request id already in use")
)

// FinishReason is why a sequence stopped, with vLLM's label values.
type FinishReason string

const (
	FinishStop   FinishReason = "stop"   // EOS, a stop token or a stop string
	FinishLength FinishReason = "length" // max_tokens or max_model_len reached
	FinishAbort  FinishReason = "abort"  // the client went away or asked to stop
	FinishError  FinishReason = "error"  // the executor failed
)

// FinishReasons lists every value, in the order metrics pre-create them.
var FinishReasons = []FinishReason{FinishStop, FinishLength, FinishAbort, FinishError, "repetition"}

// Request is one sequence to generate. For n > 1 the caller submits n
// requests sharing a Group, as vLLM's parallel sampling does.
type Request struct {
	ID     string
	Prompt []int
	Params sampling.Params

	// Priority orders preemption victims: a larger value is preempted first;
	// among equals, the latest arrival goes first (vLLM's FCFS rule).
	Priority int

	// Sink, when set, turns generated tokens into text on the engine
	// goroutine, so that stop strings end the sequence at the exact token.
	Sink TextSink

	// Constraint, when set, limits what the sequence may generate
	// (structured outputs): the executor masks its logits with it and the
	// engine moves it past every token.
	Constraint Constraint

	// Embed pools the prompt into one vector instead of generating: the
	// request ends when its prefill does, with Output.Embedding. Every
	// prompt token is computed (no prefix-cache hits); Params.MaxTokens
	// must still be at least 1.
	Embed bool

	// Group identifies the parent request of n parallel samples; GroupSize is
	// n. Both are only reported to the Observer.
	Group     string
	GroupSize int

	// Arrival is when the request reached the server; zero means at Submit.
	Arrival time.Time

	// LoRA names the adapter (one of Config.LoRAs) to run the request
	// with; empty is the base model.
	LoRA string

	// TraceParent and TraceState are the W3C trace-context headers the
	// request arrived with. The engine only carries them, untouched, to
	// observers (tracing builds the request's span under that parent).
	TraceParent, TraceState string
}

// TextSink is the incremental detokenizer of one sequence. Its methods run on
// the engine goroutine and must be quick and self-contained.
type TextSink interface {
	// Append adds a generated token and returns the text that may be shown
	// now, and whether a stop string has been reached (the text then ends
	// before it).
	Append(token int) (text string, stop bool)
	// Flush returns text held back (a possible stop-string prefix, an
	// incomplete UTF-8 sequence) when the sequence ends for another reason.
	Flush() string
}

// Constraint restricts one sequence's next token. The executor calls
// FillMask (possibly on its own threads) before sampling, the engine
// Accept after; never both at once for one sequence.
type Constraint interface {
	// FillMask sets in mask the bit of every token id that may come next
	// and clears the others; ids past the mask's end may not come.
	FillMask(mask []uint64)
	// Accept moves past tok; false means the constraint does not allow it.
	Accept(tok int) bool
}

// Output is what a Stream delivers: the tokens and text generated since the
// previous Output, merged when the reader fell behind.
type Output struct {
	Tokens   []int
	Text     string
	Logprobs []sampling.Result // one per token when the request asked for logprobs

	Finished     bool
	FinishReason FinishReason
	StopToken    int // the EOS or stop token id that ended it, or -1
	Err          error

	PromptTokens int // set on every output
	CachedTokens int // prompt tokens served from the prefix cache or loaded from the offload tier

	// Embedding is an Embed request's vector (L2-normalised), on its
	// final output.
	Embedding []float32

	// Timing is the request's timeline from the engine's clock, set on the
	// final output only (the same timestamps observers get).
	Timing Timing
}

// Executor runs one scheduled batch. It is called only from the engine
// goroutine, so it needs no locking of its own state.
type Executor interface {
	Execute(b *Batch, r *StepResult) error
}

// KernelTimer is an Executor that can time the parts of its steps — a
// GPU's kernels, the phases of a CPU's forward pass — for a profile: the
// view vLLM's users get from nsys. The engine turns it on while
// Config.Profiling reports a recording and off after, from its own
// goroutine; while on, Execute fills StepResult.Kernels, and while off
// it times nothing.
type KernelTimer interface {
	Executor
	TimeKernels(on bool)
}

// KernelTime is one timed part of a step. Start is from the start of the
// step's execution (inside Execute; on a GPU, from the device's own start
// of the step). Parts nest: one whose time lies inside another's is part
// of it (a layer's matmuls inside the layer); others do not overlap.
type KernelTime struct {
	Name            string
	Start, Duration time.Duration
}

// Batch is one step's work, flattened as vLLM's: for each scheduled sequence
// the tokens to process, where they start, its block table and whether to
// sample its next token. Slices alias engine state: read them, do not keep them.
type Batch struct {
	Seqs      []SeqBatch
	NumTokens int // sum of len(Seqs[i].Tokens)
}

// SeqBatch is one sequence's part of a Batch.
type SeqBatch struct {
	Seq        int   // engine-internal sequence number, stable for the request's life
	Tokens     []int // tokens whose KV is computed this step
	Pos        int   // position of Tokens[0]; the context after the step is Pos+len(Tokens)
	BlockTable []int // physical KV block ids, one per block-size tokens of context
	Sample     bool  // whether to sample the next token after the last one
	// Embed asks for the sequence's pooled hidden states instead of a
	// sample: its chunks are the prompt, and on the last one (Sample set)
	// the executor puts the embedding in StepResult.Embeddings.
	Embed bool
	// Banned are token ids the executor must not sample this step: while
	// a sequence has fewer than min_tokens outputs, its EOS (unless
	// ignore_eos) and stop tokens, as vLLM's min-tokens processor masks.
	// Nil when nothing is banned.
	Banned []int
	// Constraint, when not nil, says which tokens may be sampled
	// (Request.Constraint).
	Constraint Constraint
	History    []int // prompt then outputs so far (for penalties and context)
	NumPrompt  int
	Params     *sampling.Params
	RNG        *rand.Rand // the sequence's own source, seeded from the request
	LoRA       int        // the adapter, 1 + its index in Config.LoRAs; 0 is the base model

	// Draft are speculative tokens to verify: the last len(Draft) of
	// Tokens, after the sequence's last known token. The executor puts
	// the accepted leading ones in StepResult.Accepted and the token
	// after them (the target's own choice where a draft was rejected, or
	// one more when none was) in Samples, as Sampler.Verify does.
	Draft []int
	// Propose asks an executor with a draft model
	// (Capabilities.DraftModel) for up to this many drafts of the token
	// after this step's; DraftKV is how many leading positions of the
	// sequence hold the draft model's K/V (that executor computes the
	// rest of the verified ones: a prefill chunk's, the accepted
	// drafts').
	Propose int
	DraftKV int
}

// StepResult is filled by Execute. Samples is indexed like Batch.Seqs;
// entries whose Sample was false are ignored.
type StepResult struct {
	Samples []sampling.Result
	// Accepted is indexed like Batch.Seqs: a sequence with drafts gets
	// the accepted ones (their tokens are the drafts'; logprobs when
	// asked for), in order, before its Samples entry. The engine copies
	// what it keeps.
	Accepted [][]sampling.Result
	// Drafts and DraftKV are a draft model's: the drafts proposed for each
	// sequence's next step (nil for none) and the positions whose draft
	// K/V are now valid, indexed like Batch.Seqs.
	Drafts  [][]int
	DraftKV []int
	// Embeddings is indexed like Batch.Seqs: the vector of each Embed
	// sequence whose prompt ended this step, nil elsewhere. The engine
	// copies it.
	Embeddings [][]float32
	// Estimated work of the step per GPU, for vLLM's MFU counters.
	FLOPs      float64
	ReadBytes  float64
	WriteBytes float64
	// Activity is a simulated GPU's counters over the step; zero from
	// executors that do not model them.
	Activity GPUActivity
	// HostTime is host work the executor models after the step (output
	// processing, scheduling the next one) while the accelerator idles:
	// the engine lets it pass before delivering outputs, outside the busy
	// time. 0 for executors whose host work is real.
	HostTime time.Duration
	// DeviceTime, when above 0, is the time the accelerator was busy
	// with the step as the device measured it (a GPU's events): the
	// step's busy time instead of the wall time inside Execute, whose
	// rest is host work.
	DeviceTime time.Duration
	// Kernels are the step's parts in the order they began, from a
	// KernelTimer while it times them (nil otherwise). The executor owns
	// the slice; observers see it in StepEvent.Kernels.
	Kernels []KernelTime
}

// GPUActivity is what a GPU's activity counters (DCGM's profiling
// fields) would average over a step while its kernels run: the shares of
// the time its graphics engine, SMs, tensor pipes and DRAM were busy, the
// SMs' mean occupancy, and the watts above idle the kernels draw at the
// boost clock. A simulated executor models them; the simulated
// dcgm-exporter averages them over its window.
type GPUActivity struct {
	EngineActive, SMActive, SMOccupancy, TensorActive, DRAMActive float64
	Watts                                                         float64
}

// Observer receives the engine's events, on the engine goroutine: it must
// not block. Events and their slices are reused after the call returns.
type Observer interface {
	ObserveStep(s *StepEvent)
	ObserveFinished(f *FinishedEvent)
}

// StepEvent describes one engine iteration.
type StepEvent struct {
	Start        time.Time
	ScheduleTime time.Duration // planning the step
	ExecuteTime  time.Duration // inside Executor.Execute (the busy time)
	HostTime     time.Duration // the executor's modelled host work after it (StepResult.HostTime)
	End          time.Time

	NumSeqs          int // sequences in the batch
	NumTokens        int // tokens computed
	NumPrefillTokens int // of those, prompt (or recompute) tokens
	NumDecodeSeqs    int

	Preemptions   int
	PrefixQueries int // prompt tokens looked up in the prefix cache
	PrefixHits    int // of those, found cached
	// With an offload tier: tokens of this step's admissions looked up
	// in it (vLLM's connector queries) and those it held, and the
	// look-ups made (one an admission).
	ExternalQueries, ExternalHits, ExternalLookups int
	PromptTokens                                   int // prompt tokens of prefills that completed this step (cached included)
	CachedTokens                                   int // of those, not computed: served from the prefix cache or loaded from the offload tier
	ExternalTokens                                 int // of CachedTokens, loaded from the offload tier
	GenerationTokens                               int
	IterationTokens                                int // computed prompt tokens of completed prefills + generated tokens

	TTFTs []float64 // seconds, for sequences that got their first token this step
	ITLs  []float64 // seconds since the previous output, for every other sequence that produced tokens

	// Speculative decoding, as vLLM's SpecDecodingStats: drafts verified
	// (one per sequence that had any), their tokens, those accepted, and
	// accepted by position (len num_speculative_tokens; nil when off).
	SpecDrafts, SpecDraftTokens, SpecAccepted int
	SpecAcceptedPerPos                        []int

	// Seqs lists what each sequence did this step, in batch order, and
	// Preempted the ids preempted by recompute to make room.
	Seqs      []StepSeq
	Preempted []string

	// The queues and the KV cache after the step.
	Running, Waiting int
	KVUsage          float64

	FLOPs, ReadBytes, WriteBytes float64
	Activity                     GPUActivity

	// Kernels are the executor's timed parts of the step (StepResult's),
	// while a profile records and the executor is a KernelTimer.
	Kernels []KernelTime

	// Offload is the offload tier's transfers since the previous step.
	Offload OffloadEvent
	// BlockEvictions are the sampled GPU blocks evicted while planning
	// this step (Config.KVCacheMetrics).
	BlockEvictions []BlockEviction
}

// FinishedEvent describes one sequence at its end.
type FinishedEvent struct {
	ID        string
	Group     string
	GroupSize int
	Reason    FinishReason

	PromptTokens     int
	CachedTokens     int // from the prefix cache or the offload tier
	GenerationTokens int
	MaxTokens        int // 0 for an embedding

	// Timing is the request's timeline from the engine's clock, with its
	// preemption count; its methods are the intervals vLLM reports.
	Timing

	// Request is the request as submitted (parameters, trace context).
	Request *Request
	// Phases is the sequence's step-by-step history, recorded only when
	// Config.RecordPhases is set; nil otherwise.
	Phases []Phase
}

// StepSeq is one sequence's share of a step.
type StepSeq struct {
	ID     string
	Tokens int  // tokens computed
	Decode bool // one decode token; otherwise a prefill (or recompute) chunk
}

// Stats is a snapshot of the engine's state, published after every step and
// every admission; reading it never blocks the engine.
type Stats struct {
	Running  int
	Waiting  int
	Steps    uint64
	KVBlocks int // total
	KVFree   int // free, including cached blocks that can be evicted
	KVCached int // free blocks still holding reusable prefix-cache content
	KVUsage  float64
	// Preemptions counts every recompute preemption since start.
	Preemptions uint64
	// Deferred counts the waiting requests the last step passed over for
	// their LoRA adapter (--max-loras).
	Deferred int
	// With LoRA adapters: those of the running and the waiting requests,
	// comma-joined in queue order, each once (vllm:lora_requests_info),
	// and when the last step saw them.
	RunningLoRA, WaitingLoRA string
	LoRAAt                   time.Time
	// Dead is what killed the engine (Health has the whole error); empty
	// while it lives.
	Dead DeathReason
	// Offload is the offload tier now (zero without one).
	Offload OffloadStats
}
