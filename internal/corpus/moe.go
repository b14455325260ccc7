package corpus

import "fmt"

// Mixture-of-experts models, as users run them: Mixtral over two H100s,
// Qwen3-30B-A3B on one, Llama-4-Scout's FP8 checkpoint over two, Mixtral
// 8x22B over eight H200s with expert parallelism. A step of a few hundred
// tokens routes to every expert, so it reads all of an MoE model's
// weights for the arithmetic of its active few: where a dense model of the
// same size is compute-bound at the campaign's usual 2048-token budget, an
// MoE model still spends much of each step reading experts, and the budget
// is its limit (token-budget); at vLLM's 8192 on an H100 its steps are
// compute-bound. vLLM exports nothing of how the experts' load is spread
// (docs/doctor.md), so no incident here is an expert imbalance: the cost
// model prices one, and it shows only as slower steps.

// KV bytes a token of the MoE models the scenarios size caches for.
const (
	qwen3MoEKV = 98304 // Qwen3-30B-A3B: 48 layers × 4 KV heads × 128 × 2 × bf16
)

// moeScenarios are the mixture-of-experts incidents, in the classes their
// construction gives.
func moeScenarios(sc func(name, class, why string, serve, load []string) Scenario) []Scenario {
	random := func(in, out int, rate string) []string {
		return flags("--random-input-len", fmt.Sprint(in), "--random-output-len", fmt.Sprint(out), "--request-rate", rate)
	}
	return []Scenario{
		sc("h100x2/mixtral-8x7b/budget-2048", "token-budget", "Mixtral-8x7B over two H100s at --max-num-batched-tokens 2048 against 18 requests/s of 2000-token prompts: a 2048-token step routes to all 8 experts and reads 47 GB a GPU for the arithmetic of 13B active parameters (a quarter of the step at the peak bandwidth, the arithmetic 1.9× it); steps of 4096 tokens would prefill 15 % more a second",
			flags("--sim-hardware", "h100", "--sim-model", "mixtral-8x7b", "--tensor-parallel-size", "2", "--max-num-batched-tokens", "2048"), random(2000, 16, "18")),
		sc("h100/qwen3-30b-a3b/budget-2048", "token-budget", "Qwen3-30B-A3B on one H100 at --max-num-batched-tokens 2048 against 25 requests/s of 2000-token prompts: each step reads all 128 experts (61 GB) for 3B active parameters, 39 % of the step; at 8192 tokens it would prefill 29 % more a second",
			flags("--sim-hardware", "h100", "--sim-model", "qwen3-30b-a3b", "--max-num-batched-tokens", "2048"), random(2000, 16, "25")),
		sc("h100x2-fp8/llama-4-scout/budget-2048", "token-budget", "Llama-4-Scout's FP8 checkpoint (FP8 experts and MLPs) over two H100s at --max-num-batched-tokens 2048 against 17.5 requests/s of 2000-token prompts: the steps read 16 experts' FP8 weights for one's arithmetic, at the FP8 peak not enough to hide the read",
			flags("--sim-hardware", "h100", "--sim-model", "llama-4-scout-17b-16e-fp8", "--tensor-parallel-size", "2", "--max-num-batched-tokens", "2048", "--max-model-len", "8192"), random(2000, 16, "17.5")),
		sc("h100x2/mixtral-8x7b/prompts", "compute", "Mixtral-8x7B over two H100s at vLLM's 8192-token budget against 30 requests/s of 2000-token prompts: full steps whose arithmetic is 8× the experts' read",
			flags("--sim-hardware", "h100", "--sim-model", "mixtral-8x7b", "--tensor-parallel-size", "2"), random(2000, 16, "30")),
		sc("h200x8-ep/mixtral-8x22b/prompts", "compute", "Mixtral-8x22B over eight H200s with --enable-expert-parallel (whole experts on each GPU) at the 8192-token budget against 16 requests/s of 3000-token prompts: full steps of prefill",
			flags("--sim-hardware", "h200", "--sim-model", "mixtral-8x22b", "--tensor-parallel-size", "8", "--enable-expert-parallel"), random(3000, 16, "16")),
		sc("h100/qwen3-30b-a3b/long-generations", "kv-capacity", "Qwen3-30B-A3B on one H100 with a KV cache of 2048 blocks (32k tokens at 96 KiB each) against 6 requests/s of 512 + 1024 tokens: about 21 fit, the blocks run out as they grow",
			flags("--sim-hardware", "h100", "--sim-model", "qwen3-30b-a3b", "--max-model-len", "4096", "--kv-cache-memory-bytes", kvBlocks(2048, qwen3MoEKV)), random(512, 1024, "6")),
		sc("h100x2/mixtral-8x7b/chat", "healthy", "2 requests/s of 256 → 128 tokens of Mixtral-8x7B over two H100s: served as they come",
			flags("--sim-hardware", "h100", "--sim-model", "mixtral-8x7b", "--tensor-parallel-size", "2"), random(256, 128, "2")),
	}
}
