package profiles

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// hfConfig is what the cost model reads of a Hugging Face config.json.
// Every other key is ignored: it names nothing that changes a step's
// price (token ids, RoPE's frequencies, norms' epsilons, routing's
// scoring); RoPE's scaling is read for the context it allows.
// Keys that would change the price and cannot be priced are refused by
// name (layer types other than full, sliding and chunked attention, an
// unknown model_type or quantization method).
type hfConfig struct {
	ModelType     string          `json:"model_type"`
	TextConfig    json.RawMessage `json:"text_config"`
	VisionConfig  json.RawMessage `json:"vision_config"`
	Quantization  json.RawMessage `json:"quantization_config"`
	Hidden        *int            `json:"hidden_size"`
	Layers        *int            `json:"num_hidden_layers"`
	Heads         *int            `json:"num_attention_heads"`
	KVHeads       *int            `json:"num_key_value_heads"`
	HeadDim       *int            `json:"head_dim"`
	Intermediate  *int            `json:"intermediate_size"`
	DenseWidth    *int            `json:"intermediate_size_mlp"` // Llama 4's dense layers
	Vocab         *int            `json:"vocab_size"`
	MaxPosition   *int            `json:"max_position_embeddings"`
	RopeScaling   json.RawMessage `json:"rope_scaling"`
	RopeParams    json.RawMessage `json:"rope_parameters"` // transformers v5's name
	Tied          *bool           `json:"tie_word_embeddings"`
	AttentionBias *bool           `json:"attention_bias"`
	MLPBias       *bool           `json:"mlp_bias"`
	QKNorm        *bool           `json:"use_qk_norm"`

	SlidingWindow    *int     `json:"sliding_window"`
	UseSlidingWindow *bool    `json:"use_sliding_window"`
	MaxWindowLayers  *int     `json:"max_window_layers"`
	LayerTypes       []string `json:"layer_types"`
	AttentionChunk   *int     `json:"attention_chunk_size"`
	NoRopeLayers     []int    `json:"no_rope_layers"`
	NoRopeInterval   *int     `json:"no_rope_layer_interval"`

	LocalExperts  *int  `json:"num_local_experts"`
	NumExperts    *int  `json:"num_experts"`
	RoutedExperts *int  `json:"n_routed_experts"`
	TopK          *int  `json:"num_experts_per_tok"`
	TopKAlias     *int  `json:"experts_per_token"` // gpt-oss
	MoEWidth      *int  `json:"moe_intermediate_size"`
	SharedWidth   *int  `json:"shared_expert_intermediate_size"` // Qwen2-MoE
	SharedExperts *int  `json:"n_shared_experts"`                // DeepSeek
	FirstDense    *int  `json:"first_k_dense_replace"`
	MoEFreq       *int  `json:"moe_layer_freq"`
	SparseStep    *int  `json:"decoder_sparse_step"`
	DenseLayers   []int `json:"mlp_only_layers"`
	Interleave    *int  `json:"interleave_moe_layer_step"`
	MoELayers     []int `json:"moe_layers"`

	KVLoRARank *int `json:"kv_lora_rank"`
	QLoRARank  *int `json:"q_lora_rank"`
	QKNope     *int `json:"qk_nope_head_dim"`
	QKRope     *int `json:"qk_rope_head_dim"`
	VHeadDim   *int `json:"v_head_dim"`
}

// families are the model_types priced, each with where its layers'
// modules are named (for quantization_config's module patterns): the
// attention's, a dense MLP's, a shared expert's and the routed experts'.
var families = map[string]modules{
	"llama":       llamaModules,
	"mistral":     llamaModules,
	"qwen2":       llamaModules,
	"qwen3":       llamaModules,
	"mixtral":     {attention: "model.layers.%d.self_attn.q_proj", experts: "model.layers.%d.block_sparse_moe.experts.0.w1"},
	"qwen2_moe":   {attention: "model.layers.%d.self_attn.q_proj", dense: "model.layers.%d.mlp.gate_proj", shared: "model.layers.%d.mlp.shared_expert.gate_proj", experts: "model.layers.%d.mlp.experts.0.gate_proj"},
	"qwen3_moe":   {attention: "model.layers.%d.self_attn.q_proj", dense: "model.layers.%d.mlp.gate_proj", experts: "model.layers.%d.mlp.experts.0.gate_proj"},
	"llama4_text": {attention: "language_model.model.layers.%d.self_attn.q_proj", dense: "language_model.model.layers.%d.feed_forward.gate_proj", shared: "language_model.model.layers.%d.feed_forward.shared_expert.gate_proj", experts: "language_model.model.layers.%d.feed_forward.experts"},
	"deepseek_v2": deepseekModules,
	"deepseek_v3": deepseekModules,
	"gpt_oss":     {attention: "model.layers.%d.self_attn.q_proj", experts: "model.layers.%d.mlp.experts"},
}

var (
	llamaModules    = modules{attention: "model.layers.%d.self_attn.q_proj", dense: "model.layers.%d.mlp.gate_proj"}
	deepseekModules = modules{attention: "model.layers.%d.self_attn.kv_a_proj_with_mqa", dense: "model.layers.%d.mlp.gate_proj",
		shared: "model.layers.%d.mlp.shared_experts.gate_proj", experts: "model.layers.%d.mlp.experts.0.gate_proj"}
)

// maxConfigBytes bounds a config.json read (the largest published ones,
// with long quantization ignore lists, are tens of kilobytes).
const maxConfigBytes = 8 << 20

// ReadConfig reads a Hugging Face config.json, or the config.json in the
// directory path, as a model named after the directory that holds it.
func ReadConfig(path string) (Model, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "config.json")
	}
	f, err := os.Open(path)
	if err != nil {
		return Model{}, fmt.Errorf("read model config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return Model{}, fmt.Errorf("read model config %s: %w", path, err)
	}
	if len(data) > maxConfigBytes {
		return Model{}, fmt.Errorf("read model config %s: larger than %d MiB, not a config.json", path, maxConfigBytes>>20)
	}
	abs, _ := filepath.Abs(path)
	m, err := ParseConfig(filepath.Base(filepath.Dir(abs)), data)
	if err != nil {
		return Model{}, fmt.Errorf("read model config %s: %w", path, err)
	}
	return m, nil
}

// ParseConfig reads a Hugging Face config.json as the shape of the model
// named name: its layers, attention (GQA, MLA, sliding windows, chunks),
// mixture of experts and the checkpoint's quantization, with every weight
// counted from the shape.
func ParseConfig(name string, data []byte) (Model, error) {
	var top hfConfig
	if err := json.Unmarshal(data, &top); err != nil {
		return Model{}, fmt.Errorf("parse config.json: %w", err)
	}
	c, arch := &top, top.ModelType
	multimodal := len(top.TextConfig) > 0 && string(top.TextConfig) != "null"
	if multimodal {
		// A multimodal checkpoint (Llama 4): the language model's shape
		// is its text_config; the quantization is the checkpoint's.
		var text hfConfig
		if err := json.Unmarshal(top.TextConfig, &text); err != nil {
			return Model{}, fmt.Errorf("parse config.json: text_config: %w", err)
		}
		c, arch = &text, text.ModelType
	}
	mods, ok := families[arch]
	if !ok {
		known := make([]string, 0, len(families))
		for k := range families {
			known = append(known, k)
		}
		slices.Sort(known)
		return Model{}, fmt.Errorf("parse config.json: model_type %q is not a family the simulator prices (it prices %s)", arch, strings.Join(known, ", "))
	}
	m, err := shape(name, arch, c)
	if err != nil {
		return Model{}, err
	}
	if multimodal {
		if m.EncoderParams, err = visionParams(top.VisionConfig, m.Hidden); err != nil {
			return Model{}, err
		}
		m.Params += m.EncoderParams
	}
	if err := windows(&m, c); err != nil {
		return Model{}, err
	}
	quant := top.Quantization
	if len(quant) == 0 || string(quant) == "null" {
		quant = c.Quantization
	}
	if err := quantization(&m, quant, mods, moeLayers(arch, c, m.Layers)); err != nil {
		return Model{}, err
	}
	return m, nil
}

// need reads a required positive integer no larger than limit.
func need(v *int, key string, limit int) (int, error) {
	switch {
	case v == nil:
		return 0, fmt.Errorf("parse config.json: %s is missing", key)
	case *v < 1 || *v > limit:
		return 0, fmt.Errorf("parse config.json: %s is %d, want 1 to %d", key, *v, limit)
	}
	return *v, nil
}

// optional reads an optional integer in [0, limit], def when absent.
func optional(v *int, key string, def, limit int) (int, error) {
	switch {
	case v == nil:
		return def, nil
	case *v < 0 || *v > limit:
		return 0, fmt.Errorf("parse config.json: %s is %d, want 0 to %d", key, *v, limit)
	}
	return *v, nil
}

// Bounds on a config's integers: past them a file is not a model any GPU
// serves, and the arithmetic of its weights would lose meaning.
const (
	maxLayers = 1 << 10
	maxWidth  = 1 << 20
	maxHeads  = 1 << 12
	maxVocab  = 1 << 24
)

// shape reads the layers, attention and MLPs of a config and counts their
// weights.
func shape(name, arch string, c *hfConfig) (Model, error) {
	m := Model{Name: name, Arch: arch, BytesPerParam: 2}
	var err error
	if m.Layers, err = need(c.Layers, "num_hidden_layers", maxLayers); err != nil {
		return m, err
	}
	if m.Hidden, err = need(c.Hidden, "hidden_size", maxWidth); err != nil {
		return m, err
	}
	if m.Heads, err = need(c.Heads, "num_attention_heads", maxHeads); err != nil {
		return m, err
	}
	if m.KVHeads, err = optional(c.KVHeads, "num_key_value_heads", m.Heads, maxHeads); err != nil {
		return m, err
	}
	if m.KVHeads == 0 {
		return m, fmt.Errorf("parse config.json: num_key_value_heads is 0")
	}
	if m.HeadDim, err = optional(c.HeadDim, "head_dim", m.Hidden/m.Heads, maxWidth); err != nil {
		return m, err
	}
	if m.HeadDim == 0 {
		return m, fmt.Errorf("parse config.json: head_dim is 0 (hidden_size %d over %d heads)", m.Hidden, m.Heads)
	}
	if m.Vocab, err = need(c.Vocab, "vocab_size", maxVocab); err != nil {
		return m, err
	}
	if m.MaxPosition, err = optional(c.MaxPosition, "max_position_embeddings", 4096, 1<<30); err != nil {
		return m, err
	}
	if m.MaxPosition, err = ropeLength(c, m.MaxPosition); err != nil {
		return m, err
	}
	m.TiedEmbedding = c.Tied != nil && *c.Tied
	if err := attention(&m, arch, c); err != nil {
		return m, err
	}
	if err := mlp(&m, arch, c); err != nil {
		return m, err
	}
	h, v := float64(m.Hidden), float64(m.Vocab)
	// Two norms a layer (before attention and before the MLP), the final
	// norm, the embedding and an untied LM head.
	m.Params += float64(m.Layers)*2*h + h + v*h
	if !m.TiedEmbedding {
		m.Params += v * h
	}
	return m, nil
}

// attention counts the attention blocks' weights: GQA's q, k, v and o
// projections with the family's biases and q/k norms, or MLA's.
func attention(m *Model, arch string, c *hfConfig) error {
	h, heads, kv, hd := float64(m.Hidden), float64(m.Heads), float64(m.KVHeads), float64(m.HeadDim)
	if arch == "deepseek_v2" || arch == "deepseek_v3" {
		return mla(m, c)
	}
	q, k := heads*hd, kv*hd
	per := h*q + 2*h*k + q*h
	bias := c.AttentionBias != nil && *c.AttentionBias
	switch {
	case arch == "qwen2" || arch == "qwen2_moe":
		per += q + 2*k // q, k and v carry biases, o none
	case bias:
		per += q + 2*k + h
	}
	if arch == "qwen3" || arch == "qwen3_moe" {
		per += 2 * hd // RMSNorm of each head's q and k
	}
	if arch == "gpt_oss" {
		per += heads // a sink logit a head
		m.Sinks = true
	}
	m.AttentionParams = float64(m.Layers) * per
	m.Params += m.AttentionParams
	return nil
}

// mla reads DeepSeek's multi-head latent attention and counts its
// weights: the query's bottleneck (q_a, its norm, q_b) or q_proj, the
// latent's down projection with its rotary part (kv_a_proj_with_mqa) and
// norm, its up projection to every head's K and V (kv_b), and o.
func mla(m *Model, c *hfConfig) error {
	a := &MLA{}
	var err error
	if a.KVLoRARank, err = need(c.KVLoRARank, "kv_lora_rank", maxWidth); err != nil {
		return err
	}
	if a.QLoRARank, err = optional(c.QLoRARank, "q_lora_rank", 0, maxWidth); err != nil {
		return err
	}
	if a.QKNopeHeadDim, err = need(c.QKNope, "qk_nope_head_dim", maxWidth); err != nil {
		return err
	}
	if a.QKRopeHeadDim, err = need(c.QKRope, "qk_rope_head_dim", maxWidth); err != nil {
		return err
	}
	if a.VHeadDim, err = need(c.VHeadDim, "v_head_dim", maxWidth); err != nil {
		return err
	}
	h, heads := float64(m.Hidden), float64(m.Heads)
	kvr, qr := float64(a.KVLoRARank), float64(a.QLoRARank)
	nope, rope, v := float64(a.QKNopeHeadDim), float64(a.QKRopeHeadDim), float64(a.VHeadDim)
	down := h * (kvr + rope) // kv_a_proj_with_mqa, on every GPU whole
	per := down + kvr + kvr*heads*(nope+v) + heads*v*h
	repl := down + kvr
	if a.QLoRARank > 0 {
		per += h*qr + qr + qr*heads*(nope+rope)
		repl += h*qr + qr
	} else {
		per += h * heads * (nope + rope)
	}
	m.MLA = a
	m.HeadDim = a.QKNopeHeadDim + a.QKRopeHeadDim
	m.AttentionParams = float64(m.Layers) * per
	m.ReplicatedAttention = float64(m.Layers) * repl
	m.Params += m.AttentionParams
	return nil
}

// ropeParams is one set of RoPE scaling parameters: the keys of them
// vLLM reads to derive max_model_len.
type ropeParams struct {
	Type     string   `json:"rope_type"`
	OldType  string   `json:"type"`
	Factor   *float64 `json:"factor"`
	Original *int     `json:"original_max_position_embeddings"`
}

// ropeLength is the context vLLM derives from max_position_embeddings
// and RoPE's scaling: a linear, dynamic or YaRN factor multiplies it
// (YaRN's from original_max_position_embeddings), while llama3, longrope
// (su) and default keep it. rope_parameters, transformers v5's name, may
// hold one set or one a layer type (full_attention, sliding_attention).
func ropeLength(c *hfConfig, positions int) (int, error) {
	key, raw := "rope_scaling", c.RopeScaling
	if len(raw) == 0 || string(raw) == "null" {
		key, raw = "rope_parameters", c.RopeParams
	}
	if len(raw) == 0 || string(raw) == "null" {
		return positions, nil
	}
	var sets []ropeParams
	var one ropeParams
	if err := json.Unmarshal(raw, &one); err != nil {
		return 0, fmt.Errorf("parse config.json: %s: %w", key, err)
	}
	if one.Type != "" || one.OldType != "" || key == "rope_scaling" {
		sets = []ropeParams{one}
	} else {
		var byLayer map[string]ropeParams
		if err := json.Unmarshal(raw, &byLayer); err != nil {
			return 0, fmt.Errorf("parse config.json: %s: %w", key, err)
		}
		for _, k := range slices.Sorted(maps.Keys(byLayer)) {
			sets = append(sets, byLayer[k])
		}
	}
	base, factor := float64(positions), 1.0
	for _, p := range sets {
		switch cmp.Or(p.Type, p.OldType) {
		case "su", "longrope", "llama3":
			continue
		case "yarn":
			if p.Original == nil || *p.Original < 1 {
				return 0, fmt.Errorf("parse config.json: %s: yarn without a positive original_max_position_embeddings", key)
			}
			base = float64(*p.Original)
		}
		if p.Factor != nil {
			if !(*p.Factor > 0) {
				return 0, fmt.Errorf("parse config.json: %s.factor is %v, want a positive number", key, *p.Factor)
			}
			factor = *p.Factor
		}
	}
	n := base * factor
	if n < 1 || n > 1<<30 {
		return 0, fmt.Errorf("parse config.json: %s scales the context to %.0f positions, want 1 to %d", key, n, 1<<30)
	}
	return int(n), nil
}
