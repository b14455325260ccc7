package profiles

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mixtral is a config.json of the Mixtral family, as published (with keys
// the reader ignores).
const mixtral = `{
  "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
  "intermediate_size": 14336, "max_position_embeddings": 32768, "num_attention_heads": 32,
  "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
  "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02, "sliding_window": null,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 32000, "some_future_key": {"x": [1, 2]}
}`

func TestParseConfigMixtureOfExperts(t *testing.T) {
	m, err := ParseConfig("mixtral", []byte(mixtral))
	if err != nil {
		t.Fatal(err)
	}
	e := m.MoE
	if e == nil || e.Experts != 8 || e.TopK != 2 || e.Layers != 32 || e.Intermediate != 14336 || e.SharedIntermediate != 0 {
		t.Fatalf("MoE %+v", e)
	}
	if e.ExpertParams != 3*4096*14336 || m.Intermediate != 0 {
		t.Errorf("expert weights %v, dense width %d", e.ExpertParams, m.Intermediate)
	}
	// The router, H × E a layer, is every GPU's whole.
	if m.ReplicatedMLP != 32*4096*8 {
		t.Errorf("replicated router weights %v", m.ReplicatedMLP)
	}
	if got, want := m.ActiveParams(), m.MatmulParams()+32*2*e.ExpertParams; got != want {
		t.Errorf("active %v, want %v", got, want)
	}
}

// TestParseConfigLayouts reads each family's way of placing its MoE
// layers, shared experts, dense layers and windows.
func TestParseConfigLayouts(t *testing.T) {
	base := `"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "num_hidden_layers": 8, "max_position_embeddings": 4096`
	for _, tc := range []struct {
		name, json                             string
		moeLayers, shared, dense, windowLayers int
		window, chunkLayers                    int
		params                                 float64 // 0: not checked
	}{
		{name: "qwen3-moe sparse step and dense layers",
			json:      `"model_type": "qwen3_moe", "num_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 32, "intermediate_size": 128, "decoder_sparse_step": 2, "mlp_only_layers": [3]`,
			moeLayers: 3, dense: 128}, // layers 1, 5, 7 (3 is dense)
		{name: "qwen2-moe shared expert",
			json:      `"model_type": "qwen2_moe", "num_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 96, "intermediate_size": 128`,
			moeLayers: 8, shared: 96},
		{name: "deepseek first dense layers and shared experts",
			json:      `"model_type": "deepseek_v3", "n_routed_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 32, "n_shared_experts": 2, "first_k_dense_replace": 3, "intermediate_size": 128, "kv_lora_rank": 32, "q_lora_rank": 48, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16`,
			moeLayers: 5, shared: 64, dense: 128},
		{name: "llama4 interleaved with chunked attention",
			json:      `"model_type": "llama4_text", "num_local_experts": 16, "num_experts_per_tok": 1, "intermediate_size": 32, "intermediate_size_mlp": 128, "interleave_moe_layer_step": 2, "attention_chunk_size": 1024, "no_rope_layers": []`,
			moeLayers: 4, shared: 32, dense: 128, chunkLayers: 6}, // NoPE every fourth layer: 3 and 7 see everything
		{name: "llama4 NoPE layers at their interval",
			json:      `"model_type": "llama4_text", "num_local_experts": 16, "num_experts_per_tok": 1, "intermediate_size": 32, "intermediate_size_mlp": 128, "interleave_moe_layer_step": 1, "attention_chunk_size": 1024, "no_rope_layer_interval": 2`,
			moeLayers: 8, shared: 32, chunkLayers: 4}, // layers 1, 3, 5 and 7 see everything
		{name: "llama4 NoPE layers listed, with their layer_types",
			json:      `"model_type": "llama4_text", "num_local_experts": 16, "num_experts_per_tok": 1, "intermediate_size": 32, "interleave_moe_layer_step": 1, "attention_chunk_size": 1024, "no_rope_layers": [1, 1, 1, 1, 1, 0, 0, 0], "layer_types": ["chunked_attention", "chunked_attention", "chunked_attention", "chunked_attention", "chunked_attention", "full_attention", "full_attention", "full_attention"]`,
			moeLayers: 8, shared: 32, chunkLayers: 5},
		{name: "gpt-oss alternating windows",
			json:      `"model_type": "gpt_oss", "num_local_experts": 16, "experts_per_token": 4, "intermediate_size": 32, "attention_bias": true, "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"]`,
			moeLayers: 8, windowLayers: 4, window: 128},
		{name: "mistral v0.1 window on every layer",
			json:  `"model_type": "mistral", "intermediate_size": 128, "sliding_window": 512`,
			dense: 128, windowLayers: 8, window: 512,
			params: 8*(64*64+2*64*32+64*64+3*64*128+2*64) + 64 + 2*100*64},
		{name: "qwen2 window off",
			json:  `"model_type": "qwen2", "intermediate_size": 128, "sliding_window": 512, "use_sliding_window": false, "max_window_layers": 2`,
			dense: 128},
		{name: "qwen2 window on past max_window_layers",
			json:  `"model_type": "qwen2", "intermediate_size": 128, "sliding_window": 512, "use_sliding_window": true, "max_window_layers": 2`,
			dense: 128, windowLayers: 6, window: 512},
		{name: "a window past every position is full attention",
			json:  `"model_type": "mistral", "intermediate_size": 128, "sliding_window": 4096`,
			dense: 128},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseConfig("x", []byte("{"+base+", "+tc.json+"}"))
			if err != nil {
				t.Fatal(err)
			}
			moe, shared := 0, 0
			if m.MoE != nil {
				moe, shared = m.MoE.Layers, m.MoE.SharedIntermediate
			}
			if moe != tc.moeLayers || shared != tc.shared || m.Intermediate != tc.dense {
				t.Errorf("MoE layers %d, shared width %d, dense width %d; want %d, %d, %d", moe, shared, m.Intermediate, tc.moeLayers, tc.shared, tc.dense)
			}
			if m.WindowLayers != tc.windowLayers || m.Window != tc.window || m.ChunkLayers != tc.chunkLayers {
				t.Errorf("window %d on %d layers, chunked %d; want %d on %d, %d", m.Window, m.WindowLayers, m.ChunkLayers, tc.window, tc.windowLayers, tc.chunkLayers)
			}
			if tc.params > 0 && m.Params != tc.params {
				t.Errorf("params %v, want %v", m.Params, tc.params)
			}
		})
	}
}

// TestMLAKVBytesPerToken holds MLA's cache to the published sizes: one
// latent of kv_lora_rank + qk_rope_head_dim = 576 elements a layer
// (DeepSeek-V2's paper: 4.5·d_h·l with d_h 128), 70,272 bytes a token for
// DeepSeek-V3's 61 layers in bf16, the "70 KB per token" DeepSeek quotes,
// and the same on every GPU under tensor parallelism (the latent has no
// heads to split), where GQA's divides.
func TestMLAKVBytesPerToken(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int64
	}{{"deepseek-v3", 70272}, {"deepseek-v2-lite", 27 * 576 * 2}} {
		m, err := LookupModel(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range []int{1, 2, 8} {
			if got := m.KVBytesPerToken(tp); got != tc.want {
				t.Errorf("%s at TP %d: %d KV bytes a token, want %d", tc.name, tp, got, tc.want)
			}
		}
		m.KVBytes = 1
		if got := m.KVBytesPerToken(1); got != tc.want/2 {
			t.Errorf("%s with an fp8 cache: %d bytes, want %d", tc.name, got, tc.want/2)
		}
	}
	m, _ := LookupModel("mixtral-8x7b")
	if m.KVBytesPerToken(2) != m.KVBytesPerToken(1)/2 {
		t.Errorf("GQA's KV heads do not split over TP 2: %d and %d", m.KVBytesPerToken(1), m.KVBytesPerToken(2))
	}
}

// TestQuantizationConfig reads the checkpoints' formats: Scout's
// compressed-tensors FP8 with its attention left in bf16 by the ignore
// list, gpt-oss's mxfp4 experts, DeepSeek-V3's block FP8, integer
// weight-only formats, and refuses what has no terms.
func TestQuantizationConfig(t *testing.T) {
	scout, err := LookupModel("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic")
	if err != nil {
		t.Fatal(err)
	}
	fp8 := Format{Name: "fp8", Bytes: 1, FP8: true}
	if w := scout.Weights; w.Attention != (Format{}) || w.MLP != fp8 || w.Experts != fp8 || scout.Quantization != "compressed-tensors" {
		t.Errorf("Scout's formats %+v (%s)", w, scout.Quantization)
	}
	if got := scout.WeightsName(); got != "bf16 attention, fp8 MLP and experts" {
		t.Errorf("Scout's weights named %q", got)
	}
	oss, _ := LookupModel("gpt-oss-120b")
	if w := oss.Weights; w.Attention != (Format{}) || w.Experts != (Format{Name: "mxfp4", Bytes: 4.25 / 8}) {
		t.Errorf("gpt-oss's formats %+v", w)
	}
	// The experts at 4.25 bits, the rest bf16: the checkpoint's 60.8 GiB.
	if gib := oss.WeightBytes() / (1 << 30); math.Abs(gib-60.8) > 0.5 {
		t.Errorf("gpt-oss-120b weighs %.1f GiB, its checkpoint 60.8", gib)
	}
	v3, _ := LookupModel("deepseek-v3")
	if w := v3.Weights; w.Attention != fp8 || w.MLP != fp8 || w.Experts != fp8 {
		t.Errorf("DeepSeek-V3's formats %+v", w)
	}

	head := `{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "num_hidden_layers": 2, "intermediate_size": 128, `
	parse := func(q string) (Model, error) { return ParseConfig("x", []byte(head+`"quantization_config": `+q+`}`)) }
	m, err := parse(`{"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": 128}}}}`)
	if err != nil || m.Weights.MLP != (Format{Name: "int4", Bytes: 0.5 + 2.0/128}) || m.Weights.Attention != m.Weights.MLP {
		t.Errorf("W4A16: %+v, %v", m.Weights, err)
	}
	m, err = parse(`{"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["re:.*mlp.*"], "weights": {"num_bits": 8, "type": "float"}}}}`)
	if err != nil || m.Weights.MLP != (Format{Name: "fp8 weight-only", Bytes: 1}) || m.Weights.Attention != (Format{}) {
		t.Errorf("FP8 weight-only on the MLP alone: %+v, %v", m.Weights, err)
	}
	// Unstructured sparsity kept dense runs as the dense format.
	m, err = parse(`{"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": 128}}}, "sparsity_config": {"format": "dense", "sparsity_structure": "unstructured", "global_sparsity": 0.5}}`)
	if err != nil || m.Weights.MLP != (Format{Name: "int4", Bytes: 0.5 + 2.0/128}) {
		t.Errorf("W4A16 with unstructured sparsity stored dense: %+v, %v", m.Weights, err)
	}
	m, err = parse(`{"quant_method": "awq", "bits": 4, "group_size": 128}`)
	if err != nil || m.Weights.Attention.Bytes != 0.5+2.0/128 || m.Weights.Attention.FP8 {
		t.Errorf("AWQ: %+v, %v", m.Weights, err)
	}
	for _, tc := range []struct{ q, want string }{
		{`{"quant_method": "bitsandbytes", "load_in_4bit": true}`, `quant_method "bitsandbytes" is not priced`},
		{`{"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float"}, "input_activations": {"num_bits": 4, "type": "float"}}}}`, "4-bit float weights"},
		{`{"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "int"}, "input_activations": {"num_bits": 8, "type": "int"}}}}`, "8-bit int activations"},
		{`{"quant_method": "fp8", "ignored_layers": ["model.layers.0.self_attn.q_proj"]}`, "mixed formats"},
		{`{"quant_method": "mxfp4"}`, "has none"},
		{`{"quant_method": "gptq", "bits": 3}`, "at 4 or 8 bits"},
		{`{"quant_method": "compressed-tensors", "ignore": ["re:("]}`, "module pattern"},
		{`{"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float"}}}, "sparsity_config": {"format": "sparse-24-bitmask", "sparsity_structure": "2:4", "global_sparsity": 0.45}}`, "sparsity_config: 2:4 sparse"},
		{`{"quant_method": "compressed-tensors", "sparsity_config": {"format": "dense", "sparsity_structure": "2:4"}}`, "sparsity_config: 2:4 sparse"},
		{`{"quant_method": "gptq", "bits": 4, "group_size": 128, "dynamic": {"-:model.layers.0.self_attn.*": {}}}`, "quantization_config.dynamic"},
	} {
		if _, err := parse(tc.q); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.q, err, tc.want)
		}
	}
}

// TestRopeScalingContext: the context is vLLM's derived max_model_len:
// max_position_embeddings times a linear, dynamic or YaRN factor (YaRN's
// from its original length), unscaled by llama3, longrope and default,
// from rope_scaling or transformers v5's rope_parameters.
func TestRopeScalingContext(t *testing.T) {
	head := `{"model_type": "qwen2", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "num_hidden_layers": 2, "intermediate_size": 128, "max_position_embeddings": 32768`
	for _, tc := range []struct {
		rope string
		want int
	}{
		{``, 32768},
		{`, "rope_scaling": null`, 32768},
		{`, "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}`, 131072},
		{`, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}`, 32768},
		{`, "rope_scaling": {"type": "linear", "factor": 2.0}`, 65536},
		{`, "rope_scaling": {"rope_type": "dynamic", "factor": 1.5}`, 49152},
		{`, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}`, 32768},
		{`, "rope_scaling": {"type": "longrope", "factor": 4.0}`, 32768},
		{`, "rope_scaling": {"rope_type": "default", "rope_theta": 1000000.0}`, 32768},
		{`, "rope_parameters": {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32768, "rope_theta": 1e6}`, 65536},
		{`, "rope_parameters": {"full_attention": {"rope_type": "default"}, "sliding_attention": {"rope_type": "linear", "factor": 2.0}}`, 65536},
	} {
		m, err := ParseConfig("x", []byte(head+tc.rope+"}"))
		if err != nil || m.MaxPosition != tc.want {
			t.Errorf("%s: %d positions (%v), want %d", tc.rope, m.MaxPosition, err, tc.want)
		}
	}
	for _, tc := range []struct{ rope, want string }{
		{`"rope_scaling": {"type": "yarn", "factor": 4.0}`, "yarn without a positive original_max_position_embeddings"},
		{`"rope_scaling": {"type": "linear", "factor": -2}`, "rope_scaling.factor is -2"},
		{`"rope_scaling": {"type": "linear", "factor": 1e12}`, "rope_scaling scales the context"},
		{`"rope_scaling": "yarn"`, "rope_scaling"},
	} {
		if _, err := ParseConfig("x", []byte(head+", "+tc.rope+"}")); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.rope, err, tc.want)
		}
	}
}

// TestParseConfigRefusals: what cannot be priced is refused by its key.
func TestParseConfigRefusals(t *testing.T) {
	llama4 := `{"model_type": "llama4_text", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "num_hidden_layers": 4, "intermediate_size": 32, "num_local_experts": 4, "num_experts_per_tok": 1, "attention_chunk_size": 1024, `
	for _, tc := range []struct{ json, want string }{
		{`{"model_type": "gemma2", "hidden_size": 64}`, `model_type "gemma2" is not a family`},
		{`{"model_type": "llama", "num_attention_heads": 4, "vocab_size": 100, "num_hidden_layers": 2, "intermediate_size": 128}`, "hidden_size is missing"},
		{`{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "num_hidden_layers": 0, "intermediate_size": 128}`, "num_hidden_layers is 0"},
		{`{"model_type": "llama", "hidden_size": "wide"}`, "hidden_size"},
		{`{"model_type": "qwen3", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "num_hidden_layers": 2, "intermediate_size": 128, "layer_types": ["linear_attention", "full_attention"]}`, `"linear_attention" layers`},
		{`{"model_type": "mixtral", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "num_hidden_layers": 2, "intermediate_size": 128, "num_local_experts": 4, "num_experts_per_tok": 8}`, "8 experts per token of 4"},
		{`{"model_type": "mixtral", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "num_hidden_layers": 2, "intermediate_size": 128}`, "expert count"},
		{`{"model_type": "deepseek_v3", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "num_hidden_layers": 2, "intermediate_size": 128}`, "kv_lora_rank is missing"},
		{`[1, 2]`, "parse config.json"},
		{llama4 + `"no_rope_layers": [1, 0]}`, "no_rope_layers lists 2 layers of 4"},
		{llama4 + `"moe_layers": [1, 4]}`, "moe_layers lists layer 4 of a model of layers 0 to 3"},
		{`{"model_type": "qwen3_moe", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "num_hidden_layers": 2, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "decoder_sparse_step": 0}`, "decoder_sparse_step is 0"},
		{`{"model_type": "deepseek_v2", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "num_hidden_layers": 2, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "moe_layer_freq": 0, "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16}`, "moe_layer_freq is 0"},
		{llama4 + `"no_rope_layer_interval": 0}`, "no_rope_layer_interval is 0"},
		{llama4 + `"layer_types": ["chunked_attention", "chunked_attention", "chunked_attention", "chunked_attention"]}`, "4 chunked_attention layers and no_rope_layers 3 RoPE layers"},
	} {
		if _, err := ParseConfig("x", []byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.json, err, tc.want)
		}
	}
}

// TestLoadModel takes a profile's name, a Hugging Face name of one, a
// config.json or its directory; anything else is refused, naming the
// profiles.
func TestLoadModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my-mixtral")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(mixtral), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", dir, filepath.Join(dir, "config.json")} {
		m, err := LoadModel(arg)
		if err != nil {
			t.Fatalf("LoadModel(%q): %v", arg, err)
		}
		if m.MoE == nil || m.MoE.Experts != 8 || m.Params != 46_702_792_704 {
			t.Errorf("LoadModel(%q): %+v", arg, m)
		}
		if arg == dir && m.Name != "my-mixtral" {
			t.Errorf("a directory's model is named %q, want its name", m.Name)
		}
	}
	for _, arg := range []string{"gpt-5", filepath.Join(dir, "nope.json"), t.TempDir()} {
		_, err := LoadModel(arg)
		if err == nil || !strings.Contains(err.Error(), "llama-3.1-8b") && !strings.Contains(err.Error(), "config.json") {
			t.Errorf("LoadModel(%q): %v", arg, err)
		}
	}
}

// FuzzParseConfig: any bytes are refused or read into a shape whose
// weights, KV bytes and formats are finite and positive; never a panic.
func FuzzParseConfig(f *testing.F) {
	entries, err := fs.ReadDir(builtinFiles, "models")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		data, err := builtinFiles.ReadFile("models/" + e.Name())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(mixtral))
	f.Add([]byte(`{"model_type": "llama", "text_config": {"model_type": "llama4_text"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseConfig("fuzz", data)
		if err != nil {
			return
		}
		for _, v := range []float64{m.Params, m.WeightBytes(), m.MatmulParams(), m.ActiveParams(), float64(m.KVBytesPerToken(1))} {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Fatalf("a shape with weights %v, matmul %v, active %v, bytes %v, KV %d", m.Params, m.MatmulParams(), m.ActiveParams(), m.WeightBytes(), m.KVBytesPerToken(1))
			}
		}
		if e := m.MoE; e != nil && (e.TopK > e.Experts || e.Layers > m.Layers || e.ExpertParams <= 0) {
			t.Fatalf("MoE %+v of %d layers", *e, m.Layers)
		}
		if m.WindowLayers > m.Layers || m.ChunkLayers > m.Layers || m.WindowLayers > 0 && m.Window <= 0 {
			t.Fatalf("windows %d on %d, chunks on %d of %d layers", m.Window, m.WindowLayers, m.ChunkLayers, m.Layers)
		}
	})
}
