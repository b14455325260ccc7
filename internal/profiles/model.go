package profiles

import (
	"fmt"
	"strings"
)

// Model is a transformer's shape as the cost model sees it, read from its
// Hugging Face config.json (hfconfig.go): the built-in profiles are such
// files too (builtin.go), so a shape is defined once, in one form.
type Model struct {
	Name string
	HF   []string // the Hugging Face repositories of this shape, which LookupModel also accepts
	Arch string   // config.json's model_type: llama, mixtral, deepseek_v3, gpt_oss, …

	Layers        int // num_hidden_layers
	Hidden        int // hidden_size
	Heads         int // num_attention_heads
	KVHeads       int // num_key_value_heads
	HeadDim       int // head_dim, else hidden_size / num_attention_heads
	Intermediate  int // the dense MLP's width (0 where every layer is a mixture of experts)
	Vocab         int // vocab_size
	MaxPosition   int // max_position_embeddings, scaled by rope_scaling as vLLM derives max_model_len
	TiedEmbedding bool

	// Params is every weight the server loads (all experts, an encoder's),
	// counted from the shape; BytesPerParam is the activations' and the
	// unquantised weights' size (2: bf16 or fp16).
	Params        float64
	BytesPerParam float64
	// AttentionParams are the attention blocks' weights over all layers
	// (projections, their biases, q/k norms, sinks); ReplicatedAttention
	// and ReplicatedMLP are those weights of the attention and the MLP
	// side that every GPU holds whole under tensor parallelism (MLA's
	// down projections, the routers: vLLM's ReplicatedLinear).
	// EncoderParams are loaded but never run on text (a vision encoder).
	AttentionParams, ReplicatedAttention, ReplicatedMLP, EncoderParams float64

	// MoE is the mixture of experts (nil for a dense model), MLA
	// DeepSeek's multi-head latent attention (nil for MHA/GQA).
	MoE *MoE
	MLA *MLA

	// Window is a sliding window of keys on WindowLayers of the layers;
	// Chunk chunked local attention (a token sees the keys of its own
	// chunk of Chunk positions) on ChunkLayers. Sinks are gpt-oss's
	// learned sink logits, one more term in each head's softmax: read,
	// not priced (a few FLOPs a row).
	Window, WindowLayers int
	Chunk, ChunkLayers   int
	Sinks                bool

	// Quantization is the checkpoint's quantization_config.quant_method
	// ("" when unquantised), Weights the format it gives each class of
	// linear layers (hfquant.go).
	Quantization string
	Weights      Formats

	// FP8 stores every linear layer's weights in FP8 (e4m3, one byte
	// each) and runs their GEMMs on FP8 tensor cores, as vLLM's
	// --quantization fp8 does; the embedding and the LM head stay at
	// BytesPerParam.
	FP8 bool
	// KVBytes is the bytes of one cached K or V element: 0 takes
	// BytesPerParam; 1 is vLLM's --kv-cache-dtype fp8.
	KVBytes float64
}

// MoE is a mixture-of-experts MLP: on each of Layers layers every token
// goes to TopK of Experts routed experts (each ExpertParams weights,
// Intermediate wide), beside shared experts of SharedIntermediate in all
// that every token runs (a dense MLP, in Model's MLP weights).
type MoE struct {
	Experts            int
	TopK               int
	Layers             int
	Intermediate       int
	ExpertParams       float64
	SharedIntermediate int
}

// MLA is multi-head latent attention (DeepSeek-V2/V3): K and V come from
// one latent of KVLoRARank per token, cached with its rotary part of
// QKRopeHeadDim; queries through a QLoRARank bottleneck (0: none).
type MLA struct {
	KVLoRARank, QLoRARank, QKNopeHeadDim, QKRopeHeadDim, VHeadDim int
}

// Format is how a class of weights is stored and multiplied: Bytes per
// weight, scales included, and whether the GEMMs run on FP8 tensor cores
// (W8A8) rather than at the activations' type (weight-only formats are
// widened on the fly).
type Format struct {
	Name  string
	Bytes float64
	FP8   bool
}

// Formats are a checkpoint's formats of its linear layers by class: the
// attention projections, the dense MLPs and shared experts, the routed
// experts. A zero Format is unquantised.
type Formats struct {
	Attention, MLP, Experts Format
}

// fp8W8A8 is vLLM's FP8: e4m3 weights and dynamically quantised
// activations on the FP8 tensor cores.
var fp8W8A8 = Format{Name: "fp8", Bytes: 1, FP8: true}

// Format is the format of a class of linear weights as the model runs:
// --quantization fp8's for all, else the checkpoint's, else unquantised.
func (m *Model) Format(f Format) Format {
	switch {
	case m.FP8:
		return fp8W8A8
	case f.Bytes > 0:
		return f
	}
	return Format{Name: "bf16", Bytes: m.BytesPerParam}
}

// WeightsName says what the weights are, for banners: "bf16", "fp8", or
// each class's format where they differ ("bf16 attention, fp8 MLP and
// experts").
func (m *Model) WeightsName() string {
	type part struct{ format, what string }
	parts := []part{{m.Format(m.Weights.Attention).Name, "attention"}}
	if m.Intermediate > 0 || m.MoE != nil && m.MoE.SharedIntermediate > 0 {
		parts = append(parts, part{m.Format(m.Weights.MLP).Name, "MLP"})
	}
	if m.MoE != nil {
		parts = append(parts, part{m.Format(m.Weights.Experts).Name, "experts"})
	}
	same := true
	for _, p := range parts {
		same = same && p.format == parts[0].format
	}
	if same {
		return parts[0].format
	}
	var out []string
	for i := 0; i < len(parts); {
		j, whats := i+1, parts[i].what
		for ; j < len(parts) && parts[j].format == parts[i].format; j++ {
			whats += " and " + parts[j].what
		}
		out = append(out, parts[i].format+" "+whats)
		i = j
	}
	return strings.Join(out, ", ")
}

// WeightBytes is the whole model's weight size: each class of linear
// layers in its format, the rest (embeddings, norms, an encoder) at
// BytesPerParam.
func (m *Model) WeightBytes() float64 {
	attn, mlp, routed := m.AttentionParams, m.MLPParams(), m.RoutedParams()
	rest := m.Params - m.MatmulParams() - routed
	return attn*m.Format(m.Weights.Attention).Bytes + mlp*m.Format(m.Weights.MLP).Bytes +
		routed*m.Format(m.Weights.Experts).Bytes + rest*m.BytesPerParam
}

// KVElementBytes is the bytes of one cached K or V element.
func (m *Model) KVElementBytes() float64 {
	if m.KVBytes > 0 {
		return m.KVBytes
	}
	return m.BytesPerParam
}

// KVHeadsPerGPU is how many KV heads each GPU stores: vLLM splits them
// across TP ranks and replicates them when there are fewer heads than ranks.
func (m *Model) KVHeadsPerGPU(tp int) int { return max(1, m.KVHeads/max(1, tp)) }

// KVBytesPerToken is the KV cache one token takes on each GPU: K and V, for
// every layer and local KV head, in the model's dtype. MLA caches one
// latent of kv_lora_rank + qk_rope_head_dim per token and layer, which
// every GPU keeps whole (it has no heads to split). Sliding-window and
// chunked layers count as full ones: a cache of one block size for all
// layers, as the simulator's block manager keeps.
func (m *Model) KVBytesPerToken(tp int) int64 {
	if a := m.MLA; a != nil {
		return int64(float64(m.Layers*(a.KVLoRARank+a.QKRopeHeadDim)) * m.KVElementBytes())
	}
	return int64(float64(2*m.Layers*m.KVHeadsPerGPU(tp)*m.HeadDim) * m.KVElementBytes())
}

// CheckTP reports whether the model can be split tp ways, with vLLM's rules:
// attention heads divide evenly, and KV heads either divide evenly or are
// replicated a whole number of times (MLA's latent has no KV heads).
func (m *Model) CheckTP(tp int) error {
	switch {
	case tp < 1:
		return fmt.Errorf("check tensor parallel size: must be at least 1, got %d", tp)
	case m.Heads%tp != 0:
		return fmt.Errorf("check tensor parallel size: %s has %d attention heads, not divisible by --tensor-parallel-size %d",
			m.Name, m.Heads, tp)
	case m.MLA == nil && m.KVHeads%tp != 0 && tp%m.KVHeads != 0:
		return fmt.Errorf("check tensor parallel size: %s has %d KV heads, which cannot be split or replicated over %d GPUs",
			m.Name, m.KVHeads, tp)
	}
	return nil
}

// MatmulParams is the parameters that multiply every token: all but the
// input embedding, which is a row lookup, the LM head, which only runs
// for sampled positions (vLLM computes logits at those alone), the routed
// experts, which run on the tokens routed to them, and an encoder.
func (m *Model) MatmulParams() float64 {
	p := m.Params - m.HeadParams() - m.RoutedParams() - m.EncoderParams
	if !m.TiedEmbedding {
		p -= m.HeadParams()
	}
	return p
}

// MLPParams is MatmulParams outside the attention blocks: the dense MLPs,
// the shared experts, the routers and the norms.
func (m *Model) MLPParams() float64 { return m.MatmulParams() - m.AttentionParams }

// RoutedParams is every routed expert's weights over all MoE layers.
func (m *Model) RoutedParams() float64 {
	if m.MoE == nil {
		return 0
	}
	return float64(m.MoE.Layers) * float64(m.MoE.Experts) * m.MoE.ExpertParams
}

// ActiveParams is the weights one token runs through: MatmulParams and
// its TopK routed experts on every MoE layer (the "active parameters" of
// a model card, without the LM head).
func (m *Model) ActiveParams() float64 {
	p := m.MatmulParams()
	if e := m.MoE; e != nil {
		p += float64(e.Layers) * float64(e.TopK) * e.ExpertParams
	}
	return p
}

// HeadParams is the LM head's (vocabulary × hidden), read once per step
// that samples; a tied head is the embedding itself.
func (m *Model) HeadParams() float64 { return float64(m.Vocab) * float64(m.Hidden) }
