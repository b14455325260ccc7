package corpus

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
)

// kvBlocks is --kv-cache-memory-bytes for n blocks of 16 tokens of a model
// with the given KV bytes per token.
func kvBlocks(n int, bytesPerToken int) string { return fmt.Sprint(n * 16 * bytesPerToken) }

// KV bytes per token (per GPU at TP 1) of the models the scenarios size
// caches for (internal/profiles).
const (
	llama8BKV = 131072 // 32 layers × 8 KV heads × 128 × 2 × bf16
	qwen7BKV  = 57344  // 28 layers × 4 KV heads × 128 × 2 × bf16
	qwen05KV  = 12288  // 24 layers × 2 KV heads × 64 × 2 × bf16
)

func flags(xs ...string) []string { return xs }

// specSynthetic is a --speculative-config of k n-gram drafts accepted at
// vLLM's synthetic per-position rates (the simulator then drafts every
// step).
func specSynthetic(k int, rates ...float64) string {
	r := make([]string, len(rates))
	for i, x := range rates {
		r[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprintf(`{"method":"ngram","num_speculative_tokens":%d,"rejection_sample_method":"synthetic","synthetic_acceptance_rates":[%s]}`, k, strings.Join(r, ","))
}

// wideDecode is a scenario compute-bound on decode alone: vLLM's series
// alone carry neither the GPU's peaks nor its kernels' activity, so the
// doctor cannot say compute is saturated, and must not blame the cap.
func wideDecode(s Scenario) Scenario {
	s.In = map[string]Override{VLLMAlone: {Why: "on decode alone, saturation shows only against the GPU's peaks, which vLLM's series do not carry: the doctor says it cannot tell (and names --gpu), and does not blame the sequence cap",
		Expect: Expect{MustNot: capacity, Answers: map[doctor.Question]string{doctor.QCompute: "can't tell"}}}}
	return s
}

// chunked is a KV-admission scenario whose prompts exceed the token
// budget: admitted chunk by chunk, they fill the cache to the watermark
// before one is preempted, so the KV limit shows as capacity too.
func chunked(s Scenario) Scenario {
	e := Expect{Must: []string{"kv-capacity-bound"}, MustNot: others("kv-capacity-bound", capacity),
		Answers: map[doctor.Question]string{doctor.QCompute: "no", doctor.QKV: "yes(admission)|yes(capacity)"}}
	s.In = map[string]Override{}
	for _, c := range Clothes {
		s.In[c] = Override{Expect: e, Why: "prompts longer than the step budget are admitted a chunk at a time and fill the cache to the watermark before preempting: the KV limit shows as capacity as often as admission"}
	}
	return s
}

// unqueued is a host-bound scenario where nothing waits: in vLLM's series
// alone it looks like an engine serving what arrives.
func unqueued(s Scenario) Scenario {
	s.In = map[string]Override{VLLMAlone: {Why: "nothing queues, and vLLM's series alone cannot see the GPU wait within a step: they show an engine serving what arrives",
		Expect: Expect{MustNot: []string{"compute-bound", "compute-and-kv-bound", "concurrency-cap"}, Answers: map[doctor.Question]string{doctor.QScheduler: "can't tell|yes(no-work)"}}}}
	return s
}

// Scenarios are the corpus, by class.
func Scenarios() []Scenario {
	const (
		skip   = 90 * time.Second
		window = 4 * time.Minute
		every  = 10 * time.Second
	)
	sc := func(name, class, why string, serve, load []string) Scenario {
		return Scenario{Name: class + "/" + name, Class: class, Why: why, Serve: serve, Load: load, Skip: skip, Window: window, Interval: every}
	}
	fast := func(s Scenario) Scenario { s.Fast = true; return s }
	random := func(in, out int, rate string) []string {
		return flags("--random-input-len", fmt.Sprint(in), "--random-output-len", fmt.Sprint(out), "--request-rate", rate)
	}
	return append([]Scenario{
		fast(sc("h200/llama-3.1-8b/chat", "healthy", "2 requests/s of 256 → 128 tokens on an H200 that serves far more: nothing waits, the GPU mostly idles",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b"), random(256, 128, "2"))),
		fast(sc("h200/llama-3.1-8b/long-generations", "kv-capacity", "a KV cache of 2048 blocks (32k tokens) holds about 21 requests of 512 + 1024 tokens while --max-num-seqs is 1024 and the steps carry a few dozen tokens: the batch is held by the blocks, which run out as sequences grow (preemptions)",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--max-model-len", "4096", "--kv-cache-memory-bytes", kvBlocks(2048, llama8BKV)), random(512, 1024, "8"))),
		fast(sc("h200/llama-3.1-8b/rag-6k", "kv-admission", "prompts of 6000 tokens (under the 8192-token budget) into a KV cache of 10,000 tokens: one request takes 60 % of it, the next cannot be admitted until it finishes; usage sits near 62 %, never the watermark, with no preemption",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--max-model-len", "8192", "--kv-cache-memory-bytes", kvBlocks(625, llama8BKV)), random(6000, 200, "1"))),
		fast(sc("h200/llama-3.1-8b/long-prompts", "compute", "40 requests/s of 1500-token prompts against a 2048-token step budget: every step is full of prefill, the GPU busy all the time, the KV cache nearly empty",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--max-num-batched-tokens", "2048"), random(1500, 8, "40"))),
		fast(sc("h200/llama-3.1-8b/prompts-into-a-small-cache", "compute-and-kv", "2000-token prompts with 16-token answers at 30/s, a 2048-token budget and a KV cache of 21,000 tokens (about ten requests): each finish frees the blocks for the next prompt, so the steps stay full of prefill while the cache sits at the watermark",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--max-num-batched-tokens", "2048", "--max-model-len", "4096", "--kv-cache-memory-bytes", kvBlocks(1312, llama8BKV)), random(2000, 16, "30"))),
		fast(sc("h200/llama-3.1-8b/max-num-seqs-8", "concurrency-cap", "--max-num-seqs 8 against 20 requests/s of 128 → 256 tokens: eight run, the rest wait, with the KV cache and the steps nearly empty",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--max-num-seqs", "8"), random(128, 256, "20"))),
		fast(sc("h200/llama-3.1-8b/slow-host", "host", "40 ms of host time per step (--sim-host-overhead) against a GPU step of about 10 ms: the engine steps back to back while the GPU waits for the host four fifths of the time",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--max-num-seqs", "256", "--sim-host-overhead", "40ms"), random(256, 256, "40"))),
		fast(sc("h200/llama-3.1-8b/rag-answers", "prefill", "3000-token prompts with 4-token answers at 2/s: prefill is the requests' time, nothing queues",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b"), random(3000, 4, "2"))),
		fast(sc("h200/llama-3.1-8b/ramp", "decode", "a load ramping from 1 to 40 requests/s of 64 → 1000 tokens: the batch widens and every token slows as each step reads more KV",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b"),
			flags("--random-input-len", "64", "--random-output-len", "1000", "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "40"))),
		fast(sc("h200/llama-3.1-8b/timeout-2s", "client-timeouts", "clients that give up after 2 s on answers of 512 tokens that take longer: they disconnect and the engine aborts",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b"), append(random(64, 512, "10"), "--request-timeout", "2s"))),
		fast(sc("h200/llama-3.1-8b/shared-prefixes", "prefix-off", "prompts sharing four 1024-token prefixes at 4/s with prefix caching off: every prefix is recomputed",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--no-enable-prefix-caching"),
			flags("--dataset-name", "prefix-repetition", "--prefix-repetition-prefix-len", "1024", "--prefix-repetition-suffix-len", "64",
				"--prefix-repetition-num-prefixes", "4", "--prefix-repetition-output-len", "16", "--request-rate", "4"))),
		fast(sc("h200/llama-3.1-8b/spec-chat", "speculation-pays", "n-gram speculation, 4 drafts accepted at vLLM's synthetic rates 0.8, 0.6, 0.45, 0.3 (some 2.8 tokens per verify pass), on 2 requests/s of 256 → 512 tokens: a batch of a few sequences, where a verify pass costs about one decode step, and each yields several tokens",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--speculative-config", specSynthetic(4, 0.8, 0.6, 0.45, 0.3)), random(256, 512, "2"))),
		fast(sc("h200/llama-3.1-8b/spec-rejected", "speculation-costly", "n-gram speculation whose drafts are accepted at 0.1, 0.02, 0.01, 0: nearly every verify pass keeps only the token after its first draft, whatever the back-off leaves",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--speculative-config", specSynthetic(4, 0.1, 0.02, 0.01, 0)), random(256, 512, "2"))),
		sc("h200/llama-3.1-8b/spec-wide", "speculation-costly", "n-gram speculation accepted at 0.6, 0.35, 0.2, 0.1 under 120 requests/s of 128 → 512 tokens: about a thousand sequences decode at once, each verify pass scores five positions and keeps under three, and at that width a step's arithmetic sets its length (in the simulator, over a minute of it: 20.7k output tokens/s with speculation, 21.8k without)",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--speculative-config", specSynthetic(4, 0.6, 0.35, 0.2, 0.1)), random(128, 512, "120")),

		// More GPUs, models and shapes of each class.
		sc("h100/qwen2.5-7b/short-chat", "healthy", "5 requests/s of 128 → 64 tokens on an H100: served as they come",
			flags("--sim-hardware", "h100", "--sim-model", "qwen2.5-7b"), random(128, 64, "5")),
		sc("a100-80g/llama-2-7b/light", "healthy", "1 request/s of 512 → 256 tokens on an A100",
			flags("--sim-hardware", "a100-80g", "--sim-model", "llama-2-7b"), random(512, 256, "1")),
		sc("l40s/qwen2.5-0.5b/tiny-model", "healthy", "10 requests/s of 200 → 100 tokens of a 0.5B model on an L40S",
			flags("--sim-hardware", "l40s", "--sim-model", "qwen2.5-0.5b"), random(200, 100, "10")),
		sc("h100x4/llama-3.1-70b/light", "healthy", "1 request/s of 512 → 128 tokens of a 70B model over four H100s",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-70b", "--tensor-parallel-size", "4"), random(512, 128, "1")),

		sc("a100-80g/llama-2-7b/mha-cache", "kv-capacity", "Llama-2-7B keeps 512 KiB of KV per token (no GQA): the A100's default cache holds about 57 requests of 1024 + 1024 tokens, under the 256 cap, at 8/s",
			flags("--sim-hardware", "a100-80g", "--sim-model", "llama-2-7b"), random(1024, 1024, "8")),
		sc("h100/qwen3-14b/low-memory-utilisation", "kv-capacity", "--gpu-memory-utilization 0.5 leaves a 14B model about 64k tokens of KV: some 25 requests of 2000 + 600 tokens at 5/s",
			flags("--sim-hardware", "h100", "--sim-model", "qwen3-14b", "--gpu-memory-utilization", "0.5", "--max-model-len", "8192"), random(2000, 600, "5")),
		sc("l40s/llama-3.1-8b/long-answers", "kv-capacity", "an L40S's 28 GB of KV holds about 88 requests of 1024 + 1500 tokens, under the 256 cap, at 6/s",
			flags("--sim-hardware", "l40s", "--sim-model", "llama-3.1-8b", "--max-model-len", "4096"), random(1024, 1500, "6")),
		sc("a100-80g/llama-3.1-8b/seeds", "kv-capacity", "the seeds' fleet: --max-num-seqs 64, a cache for about 28 requests of 3000 + 400 tokens, 2/s and 50 ms of host time per step (the host-bound finding is true too)",
			flags("--sim-hardware", "a100-80g", "--sim-model", "llama-3.1-8b", "--max-num-seqs", "64", "--max-model-len", "4096", "--kv-cache-memory-bytes", kvBlocks(5440, llama8BKV), "--sim-host-overhead", "50ms", "--gpu-memory-utilization", "0.9"),
			flags("--random-input-len", "3000", "--random-output-len", "400", "--random-range-ratio", "0.3", "--request-rate", "2")),

		sc("h100/llama-3.1-8b/rag-12k", "kv-admission", "prompts of 12,000 tokens into a 20,000-token cache with the default 8192-token budget: a prompt's first chunk fits, its second does not, so one request runs and the next waits or is preempted",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-8b", "--max-model-len", "16384", "--kv-cache-memory-bytes", kvBlocks(1250, llama8BKV)), random(12000, 300, "0.5")),
		sc("a100-80g/qwen2.5-7b/long-documents", "kv-admission", "16,000-token documents into a cache of 24,000 tokens (--kv-cache-memory-bytes) on an A100: one at a time",
			flags("--sim-hardware", "a100-80g", "--sim-model", "qwen2.5-7b", "--max-model-len", "20000", "--max-num-batched-tokens", "16384", "--kv-cache-memory-bytes", kvBlocks(1500, qwen7BKV)), random(16000, 100, "0.6")),
		chunked(sc("l40s/llama-3.1-8b/rag-4k", "kv-admission", "4000-token prompts into a 7000-token cache with the L40S's 2048-token budget: chunks admitted and preempted, never two at once",
			flags("--sim-hardware", "l40s", "--sim-model", "llama-3.1-8b", "--max-model-len", "6000", "--kv-cache-memory-bytes", kvBlocks(440, llama8BKV)), random(4000, 100, "1"))),
		sc("h200/qwen2.5-7b/rag-30k", "kv-admission", "30,000-token prompts into a 50,000-token cache, budget 32768: one fits, two do not",
			flags("--sim-hardware", "h200", "--sim-model", "qwen2.5-7b", "--max-model-len", "32768", "--max-num-batched-tokens", "32768", "--kv-cache-memory-bytes", kvBlocks(3125, qwen7BKV)), random(30000, 200, "0.6")),

		sc("h100/llama-3.1-8b/prefill-4k", "compute", "25 requests/s of 4000-token prompts and 16-token answers with the default 8192-token budget: full prefill steps",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-8b"), random(4000, 16, "25")),
		sc("a100-80g/qwen2.5-7b/prompts", "compute", "30 requests/s of 1000 → 32 tokens against the A100's 2048-token budget",
			flags("--sim-hardware", "a100-80g", "--sim-model", "qwen2.5-7b"), random(1000, 32, "30")),
		sc("l40s/qwen2.5-0.5b/flood", "compute", "150 requests/s of 2000 → 16 tokens of a 0.5B model on an L40S: every step a full budget",
			flags("--sim-hardware", "l40s", "--sim-model", "qwen2.5-0.5b"), random(2000, 16, "150")),
		wideDecode(sc("h200/llama-3.1-8b/wide-decode", "compute", "100 requests/s of 128 → 512 tokens with 1024 sequences decoding at once: a step's arithmetic rivals its memory traffic although it carries an eighth of the budget, and twice the batch would add some 5 % of throughput (the cost model's steps: 42 ms at 1024, 80 ms at 2048)",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b"), random(128, 512, "100"))),

		sc("h100/qwen2.5-7b/prompts-into-a-small-cache", "compute-and-kv", "3000-token prompts, 8-token answers at 25/s, a 4096-token budget and a 12,000-token cache: the steps, full of prefill, would keep more requests in flight than the four the cache holds",
			flags("--sim-hardware", "h100", "--sim-model", "qwen2.5-7b", "--max-num-batched-tokens", "4096", "--max-model-len", "8192", "--kv-cache-memory-bytes", kvBlocks(750, qwen7BKV)), random(3000, 8, "25")),
		sc("a100-80g/llama-3.1-8b/prompts-into-a-small-cache", "compute-and-kv", "1500-token prompts, 8-token answers at 20/s into a 10,500-token cache with the A100's 2048-token budget: the full steps would keep a dozen in flight, the cache holds seven",
			flags("--sim-hardware", "a100-80g", "--sim-model", "llama-3.1-8b", "--max-model-len", "4096", "--kv-cache-memory-bytes", kvBlocks(660, llama8BKV)), random(1500, 8, "20")),
		sc("l40s/qwen2.5-0.5b/prompts-into-a-small-cache", "compute-and-kv", "2000-token prompts, 16-token answers at 200/s into a 20,000-token cache of a 0.5B model",
			flags("--sim-hardware", "l40s", "--sim-model", "qwen2.5-0.5b", "--max-model-len", "4096", "--kv-cache-memory-bytes", kvBlocks(1250, qwen05KV)), random(2000, 16, "200")),

		sc("h100/qwen2.5-7b/max-num-seqs-16", "concurrency-cap", "--max-num-seqs 16 against 30 requests/s of 256 → 128 tokens",
			flags("--sim-hardware", "h100", "--sim-model", "qwen2.5-7b", "--max-num-seqs", "16"), random(256, 128, "30")),
		sc("a100-80g/llama-3.1-8b/max-num-seqs-32", "concurrency-cap", "--max-num-seqs 32 against 20 requests/s of 512 → 256 tokens on an A100",
			flags("--sim-hardware", "a100-80g", "--sim-model", "llama-3.1-8b", "--max-num-seqs", "32"), random(512, 256, "20")),
		sc("l40s/qwen2.5-0.5b/max-num-seqs-4", "concurrency-cap", "--max-num-seqs 4 against 40 requests/s of 64 → 64 tokens",
			flags("--sim-hardware", "l40s", "--sim-model", "qwen2.5-0.5b", "--max-num-seqs", "4"), random(64, 64, "40")),

		sc("h100/qwen2.5-7b/python-frontend", "host", "25 ms of host time per step, --max-num-seqs 128, 30 requests/s of 128 → 256 tokens",
			flags("--sim-hardware", "h100", "--sim-model", "qwen2.5-7b", "--max-num-seqs", "128", "--sim-host-overhead", "25ms"), random(128, 256, "30")),
		sc("a100-80g/llama-3.1-8b/slow-cpu", "host", "150 ms of host time per step against a GPU step of some 50 ms (256 sequences on an A100), at 20 requests/s of 256 → 128 tokens",
			flags("--sim-hardware", "a100-80g", "--sim-model", "llama-3.1-8b", "--sim-host-overhead", "150ms"), random(256, 128, "20")),
		sc("h200x8/llama-3.1-70b/slow-host", "host", "a 70B model over eight H200s steps in a few ms; 30 ms of host time per step sets the pace at 20 requests/s",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-70b", "--tensor-parallel-size", "8", "--max-num-seqs", "256", "--sim-host-overhead", "30ms"), random(256, 256, "20")),
		unqueued(sc("h100/llama-3.1-8b/host-sets-latency", "host", "20 ms of host time per step at 30 requests/s of 128 → 128 tokens: nothing queues, but the GPU waits for the host four fifths of every step, which sets the inter-token latency",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-8b", "--sim-host-overhead", "20ms"), random(128, 128, "30"))),

		sc("h100/qwen2.5-7b/long-documents", "prefill", "8000-token prompts with 8-token answers at 1/s",
			flags("--sim-hardware", "h100", "--sim-model", "qwen2.5-7b", "--max-model-len", "16384"), random(8000, 8, "1")),
		sc("a100-80g/llama-3.1-8b/chunked-prompts", "prefill", "4000-token prompts with 16-token answers at 1/s, prefilled in 2048-token chunks",
			flags("--sim-hardware", "a100-80g", "--sim-model", "llama-3.1-8b"), random(4000, 16, "1")),
		sc("l40s/qwen3-14b/classification", "prefill", "2000-token prompts with 8-token answers at 0.5/s on an L40S",
			flags("--sim-hardware", "l40s", "--sim-model", "qwen3-14b", "--max-model-len", "8192"), random(2000, 8, "0.5")),

		sc("h100/qwen2.5-7b/ramp", "decode", "a ramp from 1 to 60 requests/s of 64 → 800 tokens",
			flags("--sim-hardware", "h100", "--sim-model", "qwen2.5-7b"),
			flags("--random-input-len", "64", "--random-output-len", "800", "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "60")),
		sc("a100-80g/llama-3.1-8b/ramp", "decode", "a ramp from 0.5 to 16 requests/s of 64 → 600 tokens on an A100",
			flags("--sim-hardware", "a100-80g", "--sim-model", "llama-3.1-8b"),
			flags("--random-input-len", "64", "--random-output-len", "600", "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "0.5", "--ramp-up-end-rps", "16")),
		sc("l40s/llama-3.1-8b/ramp", "decode", "a ramp from 0.5 to 8 requests/s of 128 → 500 tokens on an L40S",
			flags("--sim-hardware", "l40s", "--sim-model", "llama-3.1-8b"),
			flags("--random-input-len", "128", "--random-output-len", "500", "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "0.5", "--ramp-up-end-rps", "8")),

		sc("h100/qwen2.5-7b/timeout-3s", "client-timeouts", "clients with a 3 s limit asking for 1024-token answers at 5/s",
			flags("--sim-hardware", "h100", "--sim-model", "qwen2.5-7b"), append(random(64, 1024, "5"), "--request-timeout", "3s")),
		sc("a100-80g/llama-3.1-8b/timeout-1s", "client-timeouts", "clients with a 1 s limit asking for 300-token answers at 8/s on an A100",
			flags("--sim-hardware", "a100-80g", "--sim-model", "llama-3.1-8b"), append(random(128, 300, "8"), "--request-timeout", "1s")),
		sc("l40s/qwen2.5-0.5b/timeout-5s", "client-timeouts", "clients with a 5 s limit asking a 0.5B model for 2000 tokens at 2/s",
			flags("--sim-hardware", "l40s", "--sim-model", "qwen2.5-0.5b"), append(random(64, 2000, "2"), "--request-timeout", "5s")),

		sc("h100/qwen2.5-7b/shared-prefixes", "prefix-off", "eight 2048-token prefixes shared by prompts at 3/s, prefix caching off",
			flags("--sim-hardware", "h100", "--sim-model", "qwen2.5-7b", "--no-enable-prefix-caching"),
			flags("--dataset-name", "prefix-repetition", "--prefix-repetition-prefix-len", "2048", "--prefix-repetition-suffix-len", "128",
				"--prefix-repetition-num-prefixes", "8", "--prefix-repetition-output-len", "32", "--request-rate", "3")),
		sc("a100-80g/llama-3.1-8b/system-prompt", "prefix-off", "one 2000-token system prompt before every 100-token question at 3/s, prefix caching off",
			flags("--sim-hardware", "a100-80g", "--sim-model", "llama-3.1-8b", "--no-enable-prefix-caching"),
			flags("--random-prefix-len", "2000", "--random-input-len", "100", "--random-output-len", "50", "--request-rate", "3")),
		sc("l40s/llama-3.1-8b/two-prefixes", "prefix-off", "two 512-token prefixes shared by prompts at 10/s, prefix caching off",
			flags("--sim-hardware", "l40s", "--sim-model", "llama-3.1-8b", "--no-enable-prefix-caching"),
			flags("--dataset-name", "prefix-repetition", "--prefix-repetition-prefix-len", "512", "--prefix-repetition-suffix-len", "32",
				"--prefix-repetition-num-prefixes", "2", "--prefix-repetition-output-len", "8", "--request-rate", "10")),

		// Near a threshold: the honest answer is that nothing binds yet.
		sc("h200/llama-3.1-8b/kv-at-0.8", "near-capacity", "a cache that runs at about 80 % with the odd request waiting a step: close to the KV limit, not at it",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--max-model-len", "4096", "--kv-cache-memory-bytes", kvBlocks(2048, llama8BKV)), random(512, 1024, "2.2")),
		sc("h100/llama-3.1-8b/prefill-at-0.7", "near-capacity", "long prompts at about 70 % of what the steps can prefill: busy, not saturated",
			flags("--sim-hardware", "h100", "--sim-model", "llama-3.1-8b", "--max-num-batched-tokens", "2048"), random(1500, 8, "15")),
		sc("h200/llama-3.1-8b/cap-just-enough", "near-capacity", "--max-num-seqs 32 with about 25 requests running: near the cap, not pinned",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--max-num-seqs", "32"), random(128, 256, "4")),
	}, append(append(agentScenarios(sc, fast), fleetScenarios(sc, fast)...), moeScenarios(sc)...)...)
}
