package profiles

import (
	"encoding/json"
	"fmt"
	"slices"
)

// mlp reads the MLPs: a dense SwiGLU on every layer, or a mixture of
// experts on some or all of them (with shared experts beside the routed
// ones, and dense MLPs on the others), and counts their weights.
func mlp(m *Model, arch string, c *hfConfig) error {
	h := float64(m.Hidden)
	dense, err := optional(c.Intermediate, "intermediate_size", 0, maxWidth)
	if err != nil {
		return err
	}
	bias := c.MLPBias != nil && *c.MLPBias
	denseParams := func(width int) float64 {
		p := 3 * h * float64(width) // gate, up, down
		if bias {
			p += 2*float64(width) + h
		}
		return p
	}
	e, err := experts(arch, c, &dense)
	if err != nil {
		return err
	}
	layers := moeLayers(arch, c, m.Layers)
	if e == nil || len(layers) == 0 {
		if dense == 0 {
			return fmt.Errorf("parse config.json: intermediate_size is missing")
		}
		m.Intermediate = dense
		m.Params += float64(m.Layers) * denseParams(dense)
		return nil
	}
	if e.TopK > e.Experts {
		return fmt.Errorf("parse config.json: %d experts per token of %d experts", e.TopK, e.Experts)
	}
	e.Layers = len(layers)
	if m.Layers > e.Layers {
		if dense == 0 {
			return fmt.Errorf("parse config.json: %d of %d layers are dense and intermediate_size is missing", m.Layers-e.Layers, m.Layers)
		}
		m.Intermediate = dense
		m.Params += float64(m.Layers-e.Layers) * denseParams(dense)
	}
	iw := float64(e.Intermediate)
	e.ExpertParams = 3 * h * iw
	router := h * float64(e.Experts)
	if arch == "gpt_oss" {
		e.ExpertParams += 2*iw + h // gate/up and down biases
		router += float64(e.Experts)
	}
	shared := 3 * h * float64(e.SharedIntermediate)
	if arch == "qwen2_moe" && e.SharedIntermediate > 0 {
		shared += h // the shared expert's sigmoid gate
	}
	n := float64(e.Layers)
	m.Params += n * (router + shared + float64(e.Experts)*e.ExpertParams)
	m.ReplicatedMLP = n * router
	m.MoE = e
	return nil
}

// experts reads the routed experts' count, top-k, width and shared
// experts for the family; nil for a dense model. It may set the dense
// layers' width (Llama 4's intermediate_size is the experts').
func experts(arch string, c *hfConfig, dense *int) (*MoE, error) {
	e := &MoE{}
	var count *int
	var err error
	switch arch {
	case "llama", "mistral", "qwen2", "qwen3":
		return nil, nil
	case "mixtral", "gpt_oss":
		count, e.Intermediate = c.LocalExperts, *dense
		*dense = 0
	case "llama4_text":
		count, e.Intermediate, e.SharedIntermediate = c.LocalExperts, *dense, *dense // one shared expert as wide
		if *dense, err = optional(c.DenseWidth, "intermediate_size_mlp", 0, maxWidth); err != nil {
			return nil, err
		}
	case "qwen2_moe", "qwen3_moe":
		count = c.NumExperts
		if e.Intermediate, err = need(c.MoEWidth, "moe_intermediate_size", maxWidth); err != nil {
			return nil, err
		}
		if e.SharedIntermediate, err = optional(c.SharedWidth, "shared_expert_intermediate_size", 0, maxWidth); err != nil {
			return nil, err
		}
	case "deepseek_v2", "deepseek_v3":
		count = c.RoutedExperts
		if count == nil || *count == 0 {
			return nil, nil
		}
		if e.Intermediate, err = need(c.MoEWidth, "moe_intermediate_size", maxWidth); err != nil {
			return nil, err
		}
		shared, err := optional(c.SharedExperts, "n_shared_experts", 0, 1<<10)
		if err != nil {
			return nil, err
		}
		e.SharedIntermediate = shared * e.Intermediate
	}
	if count == nil || *count == 0 {
		if arch == "qwen2_moe" || arch == "qwen3_moe" {
			return nil, nil // num_experts 0: a dense model
		}
		return nil, fmt.Errorf("parse config.json: the %s family's expert count (num_local_experts, num_experts or n_routed_experts) is missing", arch)
	}
	if e.Experts, err = need(count, "the number of experts", 1<<14); err != nil {
		return nil, err
	}
	if err := layerRule(c); err != nil {
		return nil, err
	}
	topk := c.TopK
	if topk == nil {
		topk = c.TopKAlias
	}
	if e.TopK, err = need(topk, "num_experts_per_tok", 1<<14); err != nil {
		return nil, err
	}
	if e.Intermediate < 1 {
		return nil, fmt.Errorf("parse config.json: the experts' width (intermediate_size) is missing")
	}
	return e, nil
}

// layerRule refuses the keys placing the MoE layers that vLLM's model
// code cannot read either: a step or frequency of 0 (a division by zero
// there) or a layer moe_layers lists that the model does not have.
func layerRule(c *hfConfig) error {
	for _, k := range []struct {
		v   *int
		key string
	}{{c.SparseStep, "decoder_sparse_step"}, {c.MoEFreq, "moe_layer_freq"}} {
		if _, err := need(k.v, k.key, maxLayers); k.v != nil && err != nil {
			return err
		}
	}
	for _, i := range c.MoELayers {
		if i < 0 || i >= *c.Layers { // shape has read num_hidden_layers
			return fmt.Errorf("parse config.json: moe_layers lists layer %d of a model of layers 0 to %d", i, *c.Layers-1)
		}
	}
	return nil
}

// moeLayers lists the layers whose MLP is a mixture of experts, by each
// family's rule (as vLLM's model code decides it).
func moeLayers(arch string, c *hfConfig, layers int) []int {
	var out []int
	switch arch {
	case "mixtral", "gpt_oss":
		for i := range layers {
			out = append(out, i)
		}
	case "qwen2_moe", "qwen3_moe":
		step := 1
		if c.SparseStep != nil && *c.SparseStep > 0 {
			step = *c.SparseStep
		}
		for i := range layers {
			if !slices.Contains(c.DenseLayers, i) && (i+1)%step == 0 {
				out = append(out, i)
			}
		}
	case "llama4_text":
		if len(c.MoELayers) > 0 {
			for _, i := range c.MoELayers {
				if i >= 0 && i < layers && !slices.Contains(out, i) {
					out = append(out, i)
				}
			}
			return out
		}
		step := 1
		if c.Interleave != nil {
			step = *c.Interleave
		}
		for i := range layers {
			if step > 0 && (i+1)%step == 0 {
				out = append(out, i)
			}
		}
	case "deepseek_v2", "deepseek_v3":
		first, freq := 0, 1
		if c.FirstDense != nil {
			first = *c.FirstDense
		}
		if c.MoEFreq != nil && *c.MoEFreq > 0 {
			freq = *c.MoEFreq
		}
		for i := range layers {
			if i >= first && i%freq == 0 {
				out = append(out, i)
			}
		}
	}
	return out
}

// windows reads sliding-window and chunked attention: which layers see
// only a window (or their chunk) of keys.
func windows(m *Model, c *hfConfig) error {
	window := 0
	if c.SlidingWindow != nil {
		if *c.SlidingWindow < 0 {
			return fmt.Errorf("parse config.json: sliding_window is %d", *c.SlidingWindow)
		}
		window = *c.SlidingWindow
	}
	if c.AttentionChunk != nil && *c.AttentionChunk > 0 {
		// Llama 4: the layers with RoPE attend within their chunk, the
		// NoPE layers (every no_rope_layer_interval-th, 4 by default,
		// unless no_rope_layers lists them: 0 marks a NoPE layer) to
		// everything, as transformers' Llama4TextConfig derives them.
		m.Chunk = *c.AttentionChunk
		interval, err := optional(c.NoRopeInterval, "no_rope_layer_interval", 4, maxLayers)
		if err != nil {
			return err
		}
		if interval == 0 {
			return fmt.Errorf("parse config.json: no_rope_layer_interval is 0")
		}
		if n := len(c.NoRopeLayers); n > 0 && n != m.Layers {
			return fmt.Errorf("parse config.json: no_rope_layers lists %d layers of %d", n, m.Layers)
		}
		for i := range m.Layers {
			rope := (i+1)%interval != 0
			if len(c.NoRopeLayers) > 0 {
				rope = c.NoRopeLayers[i] != 0
			}
			if rope {
				m.ChunkLayers++
			}
		}
	}
	chunked := 0
	switch {
	case len(c.LayerTypes) > 0:
		if len(c.LayerTypes) != m.Layers {
			return fmt.Errorf("parse config.json: layer_types lists %d layers of %d", len(c.LayerTypes), m.Layers)
		}
		for _, t := range c.LayerTypes {
			switch t {
			case "full_attention":
			case "sliding_attention":
				m.WindowLayers++
			case "chunked_attention":
				if m.Chunk == 0 {
					return fmt.Errorf("parse config.json: layer_types has chunked_attention layers and attention_chunk_size is missing")
				}
				chunked++
			default:
				return fmt.Errorf("parse config.json: layer_types has %q layers, which the simulator does not price (it prices full_attention, sliding_attention and chunked_attention)", t)
			}
		}
		if m.Chunk > 0 && chunked != m.ChunkLayers {
			// vLLM chunks the RoPE layers, whatever layer_types says.
			return fmt.Errorf("parse config.json: layer_types has %d chunked_attention layers and no_rope_layers %d RoPE layers", chunked, m.ChunkLayers)
		}
	case window == 0:
	case m.Arch == "mistral" || m.Arch == "mixtral":
		m.WindowLayers = m.Layers // Mistral 7B v0.1's window, on every layer
	case c.UseSlidingWindow != nil && *c.UseSlidingWindow:
		// Qwen2/Qwen3: the layers from max_window_layers on slide.
		first := 0
		if c.MaxWindowLayers != nil {
			first = min(max(*c.MaxWindowLayers, 0), m.Layers)
		}
		m.WindowLayers = m.Layers - first
	}
	if m.WindowLayers > 0 && window == 0 {
		return fmt.Errorf("parse config.json: sliding_attention layers without a sliding_window")
	}
	if m.WindowLayers > 0 && window < m.MaxPosition {
		m.Window = window
	} else {
		m.WindowLayers = 0 // a window past every position is full attention
	}
	return nil
}

// visionParams is a multimodal checkpoint's vision encoder's weights,
// loaded beside the language model: its layers' attention and MLP
// (4·h² + 2·h·intermediate each) and the projector into the language
// model's input width. Approximate (patch embedding, norms and the
// pixel-shuffle adapter are left out): it only takes memory.
func visionParams(raw json.RawMessage, textHidden int) (float64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var v struct {
		Hidden       *int `json:"hidden_size"`
		Layers       *int `json:"num_hidden_layers"`
		Intermediate *int `json:"intermediate_size"`
		Output       *int `json:"vision_output_dim"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("parse config.json: vision_config: %w", err)
	}
	h, err := optional(v.Hidden, "vision_config.hidden_size", 0, maxWidth)
	if err != nil {
		return 0, err
	}
	l, err := optional(v.Layers, "vision_config.num_hidden_layers", 0, maxLayers)
	if err != nil {
		return 0, err
	}
	i, err := optional(v.Intermediate, "vision_config.intermediate_size", 0, maxWidth)
	if err != nil {
		return 0, err
	}
	out, err := optional(v.Output, "vision_config.vision_output_dim", 0, maxWidth)
	if err != nil {
		return 0, err
	}
	hf := float64(h)
	return float64(l)*(4*hf*hf+2*hf*float64(i)) + float64(out)*float64(textHidden), nil
}
