package corpus

import (
	"fmt"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
)

// The fleets users run: tensor parallelism over two to eight GPUs, FP8
// weights, token budgets from 256 tokens to vLLM's 8192. Two things read
// differently there. A step split over several GPUs, or made short by FP8's
// faster arithmetic, leaves the GPU idle for the host's few milliseconds
// a step, so its counters read low (DCGM's engine activity 0.7–0.8, as a
// real tensor-parallel deployment's do) while its steps are full and its
// queue grows: compute-bound all the same. And a --max-num-batched-tokens
// far below what the GPU could use makes every step pay the weights' read
// for few tokens: the budget, not the GPU, is the limit (token-budget).

// llama70BFP8KVTP2 is Llama-3.1-70B's KV bytes a token on each of two GPUs
// in FP8: 80 layers × 4 KV heads × 128 × 2 × 1 byte.
const llama70BFP8KVTP2 = 81920

// budgetClass is the class of engines held back by their token budget.
func budgetClass() Class {
	return Class{Name: "token-budget", Finding: "token-budget",
		Expect: Expect{Must: []string{"token-budget"}, MustNot: others("token-budget", capacity),
			Answers: map[doctor.Question]string{doctor.QCompute: "no", doctor.QKV: "no", doctor.QScheduler: "yes(budget)"}},
		In: map[string]Override{VLLMAlone: {Why: "how much of a step reading the weights takes shows only against the GPU's peak bandwidth (MBU), which vLLM's series alone do not carry: the doctor names the engine saturated on full steps, and says that whether the budget is the limit needs --gpu",
			Expect: Expect{Must: []string{"compute-bound"}, MustNot: []string{"token-budget", "compute-and-kv-bound", "kv-capacity-bound", "concurrency-cap", "under-loaded"},
				Answers: map[doctor.Question]string{doctor.QCompute: "yes", doctor.QKV: "no"}}}}}
}

// fp8Unsaid is a token-budget scenario of FP8 weights, which vLLM's series
// do not name: against the BF16 peak their arithmetic reads twice what it
// is, and seems to hide the weights' read.
func fp8Unsaid(s Scenario) Scenario {
	s.In = map[string]Override{VLLMDCGM: {Why: "vLLM's series do not say the weights are FP8: against the GPU's BF16 peak a step's arithmetic reads twice its time at the FP8 peak its GEMMs run at, and seems to hide the weights' read: the doctor names the engine compute-bound, and with --quantization fp8 names the budget",
		Expect: Expect{Must: []string{"compute-bound"}, MustNot: []string{"compute-and-kv-bound", "kv-capacity-bound", "concurrency-cap", "under-loaded"},
			Answers: map[doctor.Question]string{doctor.QCompute: "yes", doctor.QKV: "no"}}}}
	return s
}

// fleetScenarios are the fleets' incidents: each of tensor parallelism,
// FP8 and the token budget across its range, in the class its
// construction gives.
func fleetScenarios(sc func(name, class, why string, serve, load []string) Scenario, fast func(Scenario) Scenario) []Scenario {
	random := func(in, out int, rate string) []string {
		return flags("--random-input-len", fmt.Sprint(in), "--random-output-len", fmt.Sprint(out), "--request-rate", rate)
	}
	return []Scenario{
		fast(sc("h100/llama-3.1-8b/budget-512", "token-budget", "--max-num-batched-tokens 512 against 20 requests/s of 2000-token prompts: every step carries 512 tokens and reads all 16 GB of weights for them (a quarter of its time at the H100's bandwidth); steps of 2048 tokens would prefill a third more a second (the cost model's steps: 16 ms at 512, 49 ms at 2048)",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-8b", "--max-num-batched-tokens", "512"), random(2000, 16, "20"))),
		sc("a100-80g/qwen2.5-7b/budget-256", "token-budget", "--max-num-batched-tokens 256 on an A100 against 12 requests/s of 1000-token prompts: the weights' read is 30 % of each 23 ms step",
			flags("--sim-hardware", "a100-80g", "--sim-model", "qwen2.5-7b", "--max-num-batched-tokens", "256"), random(1000, 32, "12")),
		sc("l40s/llama-3.1-8b/budget-512", "token-budget", "--max-num-batched-tokens 512 on an L40S against 3.5 requests/s of 3000-token prompts: its 864 GB/s take 30 % of each 58 ms step to read the weights, and steps of 2048 tokens would prefill 30 % more a second",
			flags("--sim-hardware", "l40s", "--sim-model", "llama-3.1-8b", "--max-num-batched-tokens", "512"), random(3000, 16, "3.5")),
		sc("h200x2/llama-3.1-70b/budget-256", "token-budget", "Llama-3.1-70B over two H200s with --max-num-batched-tokens 256 against 3.6 requests/s of 2000-token prompts: each GPU reads its 70 GB half of the weights for 256 tokens a step, and the step's arithmetic, 1.2× the read at the peaks, cannot hide it (the cost model's steps: 38 ms at 256, 135 ms at 1024, a tenth more tokens a second)",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-70b", "--tensor-parallel-size", "2", "--max-num-batched-tokens", "256"), random(2000, 16, "3.6")),
		fp8Unsaid(sc("h100-fp8/llama-3.1-8b/budget-512", "token-budget", "FP8 weights (--sim-dtype fp8) and --max-num-batched-tokens 512 against 40 requests/s of 2000-token prompts: FP8 halves the read and the arithmetic alike, and the 8 GB read is still a quarter of each 10 ms step",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-8b", "--sim-dtype", "fp8", "--max-num-batched-tokens", "512"), random(2000, 16, "40"))),

		fast(sc("h100x2-fp8/qwen2.5-7b/host-gaps", "compute", "Qwen2.5-7B in FP8 over two H100s, 2048-token steps of some 18 ms on the GPU and 5 ms of host work a step (--sim-host-overhead), against 55 requests/s of 2000-token prompts: the steps are full and the queue grows, while the GPU idles a fifth of the time (DCGM's engine activity under 0.8)",
			flags("--sim-hardware", "h100", "--sim-model", "qwen2.5-7b", "--sim-dtype", "fp8", "--tensor-parallel-size", "2", "--max-num-batched-tokens", "2048", "--sim-host-overhead", "5ms"), random(2000, 16, "55"))),
		sc("h200x2-fp8/llama-3.1-8b/host-gaps", "compute", "Llama-3.1-8B in FP8 over two H200s, 2048-token steps of 20 ms on the GPU and 6 ms of host work each, against 50 requests/s of 2000-token prompts: full steps and a growing queue, the GPU's counters reading as a quarter idle",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--sim-dtype", "fp8", "--tensor-parallel-size", "2", "--max-num-batched-tokens", "2048", "--sim-host-overhead", "6ms"), random(2000, 16, "50")),
		sc("h100x4-fp8/llama-3.1-70b/host-gaps", "compute", "Llama-3.1-70B in FP8 over four H100s, 1024-token steps of 57 ms on the GPU and 12 ms of host work each, against 10 requests/s of 2000-token prompts: full steps, a growing queue, the engine activity under 0.9",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-70b", "--sim-dtype", "fp8", "--tensor-parallel-size", "4", "--max-num-batched-tokens", "1024", "--sim-host-overhead", "12ms"), random(2000, 16, "10")),
		sc("h200x8/llama-3.1-70b/prompts", "compute", "Llama-3.1-70B over eight H200s at vLLM's 8192-token budget against 12 requests/s of 3000-token prompts: every step full of prefill",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-70b", "--tensor-parallel-size", "8"), random(3000, 16, "12")),
		sc("h200x2/llama-3.1-70b/budget-512", "compute", "Llama-3.1-70B over two H200s at --max-num-batched-tokens 512 against 5 requests/s of 2000-token prompts: the weights' read is a fifth of each step at the peak bandwidth, but the step's arithmetic is 2.4× it, and the H200's GEMMs overlap the two (the cost model's steps: 69 ms at 512, 135 ms at 1024, 2 % more tokens a second): the GPU's arithmetic is the limit, not the budget",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-70b", "--tensor-parallel-size", "2", "--max-num-batched-tokens", "512"), random(2000, 16, "5")),
		sc("h100/llama-3.1-8b/budget-2048", "compute", "--max-num-batched-tokens 2048 against 25 requests/s of 2000-token prompts: full steps whose weight read is under a tenth of each 49 ms step, so a larger budget would gain little (3 %): the GPU's arithmetic is the limit, not the budget",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-8b", "--max-num-batched-tokens", "2048"), random(2000, 16, "25")),

		sc("h100x2-fp8/llama-3.1-70b/long-generations", "kv-capacity", "Llama-3.1-70B in FP8 over two H100s with an FP8 KV cache of 2048 blocks a GPU (80 KiB a token: 32k tokens) against 4 requests/s of 512 + 1024 tokens: about 21 fit, twice that arrive, and the blocks run out as they grow",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-70b", "--sim-dtype", "fp8", "--tensor-parallel-size", "2", "--max-model-len", "4096", "--kv-cache-memory-bytes", kvBlocks(2048, llama70BFP8KVTP2)), random(512, 1024, "4")),

		// Data parallelism: two or four engine ranks behind one API, each its
		// own scheduler, KV cache and GPU, the API balancing by queue.
		sc("h100-dp2/llama-3.1-8b/prompts", "compute", "--data-parallel-size 2 on two H100s at a 2048-token budget against 50 requests/s of 2000-token prompts: both ranks step full of prefill and the queue grows",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-8b", "--data-parallel-size", "2", "--max-num-batched-tokens", "2048"), random(2000, 16, "50")),
		sc("h100-dp2/qwen2.5-7b/max-num-seqs-16", "concurrency-cap", "--data-parallel-size 2 with --max-num-seqs 16 a rank against 60 requests/s of 256 → 128 tokens: 32 run, the rest wait, with each rank's KV cache and steps nearly empty",
			flags("--sim-hardware", "h100", "--sim-model", "qwen2.5-7b", "--data-parallel-size", "2", "--max-num-seqs", "16"), random(256, 128, "60")),
		sc("h200-dp2/llama-3.1-8b/long-generations", "kv-capacity", "--data-parallel-size 2, each rank with a KV cache of 2048 blocks (about 21 requests of 512 + 1024 tokens), against 16 requests/s: the blocks run out as sequences grow",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--data-parallel-size", "2", "--max-model-len", "4096", "--kv-cache-memory-bytes", kvBlocks(2048, llama8BKV)), random(512, 1024, "16")),
		sc("h100-dp4/llama-3.1-8b/chat", "healthy", "--data-parallel-size 4 against 8 requests/s of 256 → 128 tokens: each rank serves a quarter as it comes",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-8b", "--data-parallel-size", "4"), random(256, 128, "8")),
		sc("h100-dp2/llama-3.1-8b/prompts-at-0.6", "near-capacity", "--data-parallel-size 2 at a 2048-token budget against 13 requests/s of 2000-token prompts, 60 % of what the two ranks prefill: each rank busy about 60 % of the time (the two ranks' busy seconds sum past 1), nothing waits",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-8b", "--data-parallel-size", "2", "--max-num-batched-tokens", "2048"), random(2000, 16, "13")),

		// CPU KV offload (--kv-offloading-size): every block computed is
		// copied to host memory, and a prefix the GPU evicted comes back
		// from there over PCIe.
		sc("h100/qwen2.5-7b/agent-evicted-offload", "agent-sessions", "the agent sessions of agent-evicted (forty-odd sessions between their turns holding several times the 40,000 tokens of KV) with a 32 GiB offload tier: the conversations the GPU evicts while their tools run come back from host memory at the next turn, so most prompt tokens are served from a cache again",
			flags("--sim-hardware", "h100", "--sim-model", "qwen2.5-7b", "--max-model-len", "32768", "--kv-cache-memory-bytes", kvBlocks(2500, qwen7BKV), "--kv-offloading-size", "32"),
			agentLoad("0.25", 8, 500, 1000, 200, 20*time.Second)),

		sc("h100/llama-3.1-8b/budget-512-at-0.7", "near-capacity", "--max-num-batched-tokens 512 at about 70 % of what its steps can prefill: small steps, but nothing waits, so the budget limits nothing yet",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-8b", "--max-num-batched-tokens", "512"), random(2000, 16, "11")),
	}
}
