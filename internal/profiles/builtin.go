package profiles

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// The built-in models are their Hugging Face config.json files
// (models/NAME.json), read by the same reader as a user's: --sim-model's
// names are shortcuts to these files, not a second definition of a shape.
// Where each file comes from:
//   - the campaign's models and the mixture-of-experts shapes beside them
//     (Llama-3.1-8B and 70B, Llama-2-7B, CodeLlama-34B, Qwen2.5-7B,
//     Qwen3-14B, Mistral-Nemo, Yi-34B, Mixtral-8x7B, Qwen3-30B-A3B,
//     DeepSeek-V2-Lite, Llama-4-Scout FP8): the published files, as
//     ../shared/reference/models keeps them (inference-sim's copies);
//   - Llama-3.2-1B and 3B, Llama-2-70B, Qwen2.5-0.5B, Qwen3-32B: the shape
//     keys of their published files (the values this table held before);
//   - Mixtral-8x22B-Instruct: the published Mixtral-8x22B config (hidden
//     6144, 56 layers, 48 heads, 8 KV heads, 8 experts of 16384, top 2,
//     65536 positions) with the Instruct model's 32768-token vocabulary
//     (its card's MistralTokenizer.v3; the base repository's file says
//     32000): 140.6B weights, as published;
//   - DeepSeek-V3: transformers' DeepseekV3Config, whose defaults are
//     DeepSeek-V3's (61 layers, hidden 7168, 128 heads, MLA with
//     kv_lora_rank 512, q_lora_rank 1536, rope 64, nope 128, v 128; 256
//     routed experts of 2048, top 8, one shared, the first 3 layers dense
//     at 18432, vocabulary 129280), with the checkpoint's 163840 positions
//     and its FP8 quantization_config (e4m3, 128×128 blocks, dynamic
//     activations): 671B weights without the MTP layer, as published;
//   - gpt-oss-120b: transformers' GptOssConfig, whose defaults are the
//     120B's (36 layers, hidden 2880, 64 heads of 64, 8 KV heads, 128
//     experts of 2880, top 4, every other layer a 128-token sliding
//     window, biases, sinks, vocabulary 201088, 131072 positions), with
//     the checkpoint's mxfp4 quantization_config (the experts; attention,
//     router, embedding and head left in bf16): 116.8B weights, as its
//     card says.
//
//go:embed models/*.json
var builtinFiles embed.FS

// builtin is one built-in model: its name, the file of its shape and the
// Hugging Face repositories of that shape.
type builtin struct {
	name string
	hf   []string
}

var builtins = []builtin{
	{"llama-3.1-8b", []string{"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B-Instruct"}},
	{"llama-3.1-70b", []string{"meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B", "meta-llama/Meta-Llama-3.1-70B-Instruct"}},
	// Llama 3.2's small models share Llama 3.1's tokenizer (the same
	// 128256 ids): the draft models of speculative decoding for it.
	{"llama-3.2-1b", []string{"meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-1B"}},
	{"llama-3.2-3b", []string{"meta-llama/Llama-3.2-3B-Instruct", "meta-llama/Llama-3.2-3B"}},
	{"llama-2-7b", []string{"meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf"}},
	{"llama-2-70b", []string{"meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-70b-chat-hf"}},
	{"codellama-34b", []string{"codellama/CodeLlama-34b-hf", "codellama/CodeLlama-34b-Instruct-hf"}},
	{"qwen2.5-7b", []string{"Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B"}},
	{"qwen2.5-0.5b", []string{"Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B"}},
	{"qwen3-14b", []string{"Qwen/Qwen3-14B"}},
	// Its attention is wider than its hidden size: 64 heads of 128.
	{"qwen3-32b", []string{"Qwen/Qwen3-32B"}},
	{"mistral-nemo-12b", []string{"mistralai/Mistral-Nemo-Instruct-2407", "mistralai/Mistral-Nemo-Base-2407"}},
	{"yi-34b", []string{"01-ai/Yi-34B", "01-ai/Yi-34B-Chat"}},
	{"mixtral-8x7b", []string{"mistralai/Mixtral-8x7B-v0.1", "mistralai/Mixtral-8x7B-Instruct-v0.1"}},
	{"mixtral-8x22b", []string{"mistralai/Mixtral-8x22B-Instruct-v0.1", "mistralai/Mixtral-8x22B-v0.1"}},
	{"qwen3-30b-a3b", []string{"Qwen/Qwen3-30B-A3B"}},
	{"deepseek-v2-lite", []string{"deepseek-ai/DeepSeek-V2-Lite", "deepseek-ai/DeepSeek-V2-Lite-Chat"}},
	{"llama-4-scout-17b-16e-fp8", []string{"RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic"}},
	{"deepseek-v3", []string{"deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3-Base"}},
	{"gpt-oss-120b", []string{"openai/gpt-oss-120b"}},
}

// ModelNames lists the valid model profile names.
func ModelNames() []string {
	names := make([]string, len(builtins))
	for i, b := range builtins {
		names[i] = b.name
	}
	return names
}

// LookupModel returns the named model profile, by its name or a Hugging
// Face repository of its shape, matched case-insensitively.
func LookupModel(name string) (Model, error) {
	for _, b := range builtins {
		if strings.EqualFold(b.name, name) || containsFold(b.hf, name) {
			return b.load()
		}
	}
	return Model{}, fmt.Errorf("look up model %q: unknown profile (valid: %s)",
		name, strings.Join(ModelNames(), ", "))
}

// LoadModel is --sim-model's value: a profile's name or a Hugging Face
// repository of one (LookupModel), else the path of a config.json or of
// the directory holding it (ReadConfig).
func LoadModel(arg string) (Model, error) {
	m, err := LookupModel(arg)
	if err == nil {
		return m, nil
	}
	if _, serr := os.Stat(arg); serr == nil {
		return ReadConfig(arg)
	} else if !errors.Is(serr, fs.ErrNotExist) || strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".json") {
		return Model{}, fmt.Errorf("look up model %q: not a profile (valid: %s) nor a config.json: %w",
			arg, strings.Join(ModelNames(), ", "), serr)
	}
	return Model{}, err
}

// load reads the built-in's config.json.
func (b *builtin) load() (Model, error) {
	data, err := builtinFiles.ReadFile("models/" + b.name + ".json")
	if err != nil {
		return Model{}, fmt.Errorf("BUG: built-in model %s: %w", b.name, err)
	}
	m, err := ParseConfig(b.name, data)
	if err != nil {
		return Model{}, fmt.Errorf("BUG: built-in model %s: %w", b.name, err)
	}
	m.HF = b.hf
	return m, nil
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}
