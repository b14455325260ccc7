// Package executor declares what every executor is to the replica that
// assembles it, as database/sql/driver declares what a driver is to
// database/sql: one lifecycle (Lifecycle: what it runs, load the model,
// size the KV cache, start, close) that the simulated, CPU and CUDA
// executors implement in their own packages (sim, cpu, cuda below), and
// what an executor says of its model once loaded (Spec). It runs nothing
// itself; the step's seam is engine.Executor.
//
// It must not import an executor, the server, metrics, tracing, net/http,
// Prometheus or OpenTelemetry: the executors import it.
package executor

import (
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/jinja"
	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// Lifecycle is how every executor comes up and goes down. Its owner calls
// Capabilities before anything else (to refuse what the executor cannot
// run before it spends memory), Load once, KVBlocks, Start once, and Close
// once the engine has stopped calling Execute, or as soon as a step before
// failed: Close releases whatever the steps so far made, each owner after
// what borrows from it.
type Lifecycle interface {
	// Capabilities is what the started executor will declare
	// (engine.Capable). What depends on the model (an embedding model's
	// pooling) is known once Load has read it.
	Capabilities() engine.Capabilities
	// Load reads the model and puts it where it runs (a GPU's memory),
	// for a step and a context within l; zero fields of l take the
	// executor's defaults, and Spec.Limits says what was taken.
	Load(l Limits) (*Spec, error)
	// KVBlocks says how many KV blocks of Limits.BlockSize tokens fit in
	// m beside the loaded model. It allocates nothing: Start does.
	KVBlocks(m KVMemory) (int, error)
	// Start allocates a KV cache of numBlocks blocks and returns the
	// executor the engine steps.
	Start(numBlocks int) (*Started, error)
	// Close releases the executor, the model and the device.
	Close()
}

// Limits are the engine's sizes an executor is loaded for (vLLM's
// --max-model-len, --max-num-seqs, --max-num-batched-tokens and
// --block-size).
type Limits struct {
	MaxModelLen         int
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	BlockSize           int
}

// Or is l with each field left at zero taken from def.
func (l Limits) Or(def Limits) Limits {
	or := func(a, b int) int {
		if a == 0 {
			return b
		}
		return a
	}
	return Limits{MaxModelLen: or(l.MaxModelLen, def.MaxModelLen), MaxNumSeqs: or(l.MaxNumSeqs, def.MaxNumSeqs),
		MaxNumBatchedTokens: or(l.MaxNumBatchedTokens, def.MaxNumBatchedTokens), BlockSize: or(l.BlockSize, def.BlockSize)}
}

// KVMemory is the memory asked of the KV cache: Bytes of it
// (--kv-cache-memory-bytes), or when 0 what is left of Utilization of the
// device's memory (--gpu-memory-utilization; 0: the executor's default,
// Spec.GPUMemoryUtilization). The CPU, whose memory is shared with
// everything else, sizes by Limits when Bytes is 0.
type KVMemory struct {
	Bytes       int64
	Utilization float64
}

// Spec is what an executor says of itself once its model is loaded: what
// the server, the engine, the metrics and the banner take from it.
type Spec struct {
	// Name is the default served model name; Describe is the banner's
	// line of what runs it.
	Name, Describe string
	// Vocab is the model's tokenizer as the API uses it; Chat its chat
	// template (nil: ChatML).
	Vocab Vocab
	Chat  Chat
	// EOS are the tokens that end generation.
	EOS []int
	// Limits are the sizes Load took: those asked, the executor's
	// defaults for the rest (the model's context, and step sizes for its
	// hardware).
	Limits Limits
	// GPUMemoryUtilization is the share of device memory KVBlocks takes
	// by default (0: none, on the CPU).
	GPUMemoryUtilization float64
	// CacheDtype is cache_config_info's cache_dtype: "auto", or the
	// type asked for.
	CacheDtype string
	// StepTimeout is the engine's watchdog by default (0: the serving
	// default): how long one step may take on this executor.
	StepTimeout time.Duration
	// Embeddings says how the model embeds; nil when it does not.
	Embeddings *Embeddings
	// DraftMaxModelLen is the draft model's own context (0 without one):
	// speculative decoding's max_model_len unless one is asked for.
	DraftMaxModelLen int
	// Info is glassbox_executor_info's labels; PeakFLOPs and
	// PeakBandwidth the device's, per GPU (0 where unknown).
	Info                     map[string]string
	PeakFLOPs, PeakBandwidth float64
	// GPU is where dcgm-exporter's series come from; zero on the CPU.
	GPU GPU
}

// Vocab is a model's tokenizer as the server and the grammars use it.
type Vocab interface {
	Encode(text string) []int
	Decode(ids []int) string
	TokenBytes(id int) []byte // nil for a special token
	TokenString(id int) string
	VocabSize() int
}

// Chat renders conversations with a model's chat template.
type Chat interface {
	Render(msgs []jinja.Message, tools []any) (string, error)
	// Template is the template's source ("" when it has none usable),
	// which names the tool-call format it writes.
	Template() string
}

// Embeddings is how a model embeds: vectors of Dim values, pooled as
// Pooling says; Truncatable ones may be shortened (Matryoshka).
type Embeddings struct {
	Dim         int
	Pooling     string
	Truncatable bool
}

// GPU is the device whose counters dcgm-exporter serves: simulated ones
// (Simulated, Count of them), or a real one by its PCI bus id.
type GPU struct {
	Simulated *profiles.Hardware
	Count     int
	PCIBusID  string
}

// Started is an executor ready for the engine, with what starting it
// chose.
type Started struct {
	Executor engine.Executor
	// Describe is added to Spec.Describe (the GPU's attention kernels);
	// Info's labels replace Spec.Info's of the same name; Memory is the
	// banner's account of the device's memory. Empty where there is
	// nothing to say.
	Describe, Memory string
	Info             map[string]string
}
