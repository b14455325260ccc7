package doctor

import (
	"slices"
	"strings"
	"testing"
)

// ruleCase is one synthetic window and what a rule must say about it.
type ruleCase struct {
	name   string
	rule   string
	fires  bool
	modify func(l *load)
}

func ruleCases() []ruleCase {
	kvBound := func(l *load) {
		l.kv, l.waiting, l.running, l.busy = constant(0.95), constant(6), constant(8), 0.99
	}
	computeBound := func(l *load) {
		l.busy, l.waiting, l.running, l.steps, l.prompt, l.gen, l.success = 0.99, constant(5), constant(20), 20, 150000, 100, 100
	}
	// Steps full of a 512-token budget of prefill on an H100: 60 steps a
	// second, each reading 15.6 GB (the weights) and computing 505 tokens
	// of an 8B model: MBU 0.28, MFU 0.49.
	budgetFull := func(l *load) {
		l.busy, l.waiting, l.running, l.steps, l.prompt, l.gen, l.success = 0.99, constant(5), constant(20), 60, 30000, 300, 10
		l.maxBatched, l.peakFLOPs, l.peakBW, l.flops, l.readBytes = 512, 989e12, 3.35e12, 16e9*30300, 60*15.6e9
	}
	// The GPU's counter reads 70 % busy: the engine steps back to back
	// (busy + host = 1) on full prefill steps while the queue grows by ten
	// requests a second (a tenth of the arrivals), and the host takes 30 %
	// of each step (under the host-bound line).
	lowCounters := func(l *load) {
		computeBound(l)
		l.busy, l.host = 0.7, 0.3
		l.waiting = func(i int) float64 { return float64(5 + 10*i) }
	}
	capped := func(l *load) {
		l.maxSeqs, l.running, l.waiting, l.kv, l.busy = 4, constant(4), constant(10), constant(0.05), 0.99
	}
	return []ruleCase{
		{"kv full, queue, small steps", "kv-capacity-bound", true, kvBound},
		{"kv full but nothing waits", "kv-capacity-bound", false, func(l *load) { kvBound(l); l.waiting = constant(0) }},
		{"kv full, queue, but full steps", "kv-capacity-bound", false, func(l *load) { kvBound(l); l.steps, l.prompt = 20, 150000 }},
		{"kv at 0.5 with a queue", "kv-capacity-bound", false, func(l *load) { kvBound(l); l.kv = constant(0.5) }},

		{"busy, queue, kv room", "compute-bound", true, computeBound},
		{"busy, no queue", "compute-bound", false, func(l *load) { computeBound(l); l.waiting = constant(0) }},
		{"queue but idle executor", "compute-bound", false, func(l *load) { computeBound(l); l.busy = 0.4 }},
		{"busy, queue, kv full", "compute-bound", false, func(l *load) { computeBound(l); l.kv = constant(0.97) }},

		{"busy counter low, but the engine flat out on full steps while the queue grows", "compute-bound", true, lowCounters},
		{"busy counter low on full steps, the queue steady", "compute-bound", false, func(l *load) { lowCounters(l); l.waiting = constant(5) }},
		{"busy counter low on full steps, the queue growing, the host half of each step", "compute-bound", false, func(l *load) { lowCounters(l); l.busy, l.host = 0.45, 0.55 }},
		{"vLLM + DCGM: engine activity low, the engine flat out on full steps while the queue grows", "compute-bound", true, func(l *load) {
			lowCounters(l)
			l.vllm, l.dcgm = true, 0.6
		}},
		{"vLLM + DCGM: engine activity low on full steps, the queue steady", "compute-bound", false, func(l *load) {
			lowCounters(l)
			l.vllm, l.dcgm, l.waiting = true, 0.6, constant(5)
		}},

		{"steps full of a 512-token budget spend 28% of the time reading weights", "token-budget", true, budgetFull},
		{"steps full of a 512-token budget: not compute-bound", "compute-bound", false, budgetFull},
		{"steps full of a 2048-token budget spend 9% reading weights", "token-budget", false, func(l *load) {
			budgetFull(l)
			l.maxBatched, l.steps, l.readBytes = 2048, 15, 15*15.6e9
		}},
		{"steps full of a 2048-token budget: compute-bound", "compute-bound", true, func(l *load) {
			budgetFull(l)
			l.maxBatched, l.steps, l.readBytes = 2048, 15, 15*15.6e9
		}},
		{"steps 63% full of a 512-token budget, a third of their time reading weights: room in them, not compute-bound", "compute-bound", false, func(l *load) {
			budgetFull(l)
			l.prompt, l.readBytes, l.flops = 19000, 60*15.6e9*1.2, 16e9*19300
		}},
		{"steps full of a 512-token budget whose arithmetic hides the read (2.3× it: a GPU that overlaps them)", "token-budget", false, func(l *load) { budgetFull(l); l.flops *= 1.3 }},
		{"steps full of a 512-token budget whose arithmetic hides the read: compute-bound", "compute-bound", true, func(l *load) { budgetFull(l); l.flops *= 1.3 }},
		{"the same steps of FP8 weights: against the FP8 peak, the arithmetic no longer hides the read", "token-budget", true, func(l *load) {
			budgetFull(l)
			l.flops, l.quantization = l.flops*1.3, "fp8"
		}},
		{"a 512-token budget of decode reads KV, not only the weights", "token-budget", false, func(l *load) { budgetFull(l); l.prompt, l.gen = 300, 30000 }},
		{"a 512-token budget full, nothing waits", "token-budget", false, func(l *load) { budgetFull(l); l.waiting = constant(0) }},
		{"a 512-token budget full, the GPU's counter low but the engine flat out while the queue grows", "token-budget", true, func(l *load) {
			budgetFull(l)
			l.busy, l.host = 0.7, 0.3
			l.waiting = func(i int) float64 { return float64(5 + i) }
		}},
		{"a 512-token budget full, the GPU's counter low and the queue steady", "token-budget", false, func(l *load) { budgetFull(l); l.busy, l.host = 0.7, 0.3 }},

		{"vLLM + DCGM: steps cut to 512 tokens of 3000-token prompts (an inferred budget), 28% of the time reading weights", "token-budget", true, func(l *load) {
			budgetFull(l)
			l.vllm, l.dcgm, l.gpuName = true, 0.85, "NVIDIA H100 80GB HBM3"
		}},
		{"vLLM + DCGM: steps of 505 tokens, prompts of 300: no budget below 2048 to infer", "token-budget", false, func(l *load) {
			budgetFull(l)
			l.vllm, l.dcgm, l.gpuName, l.success = true, 0.85, "NVIDIA H100 80GB HBM3", 100
		}},
		{"vLLM alone: steps cut to 512 tokens, no GPU peaks: compute-bound", "compute-bound", true, func(l *load) { budgetFull(l); l.vllm = true }},
		{"vLLM alone: steps cut to 512 tokens, no GPU peaks: no token-budget", "token-budget", false, func(l *load) { budgetFull(l); l.vllm = true }},

		// Two data-parallel ranks: the busy, step and FLOP counters sum
		// over them, the cap is each rank's.
		{"two data-parallel ranks, each busy half the time on full steps", "compute-bound", false, func(l *load) { computeBound(l); l.busy, l.engines = 1, 2 }},
		{"two data-parallel ranks, each busy all the time on full steps", "compute-bound", true, func(l *load) { computeBound(l); l.busy, l.engines = 1.98, 2 }},
		{"two data-parallel ranks, each running 2 under a cap of 4", "concurrency-cap", false, func(l *load) { capped(l); l.engines = 2 }},
		{"two data-parallel ranks, each running 4 at a cap of 4", "concurrency-cap", true, func(l *load) { capped(l); l.engines, l.running = 2, constant(8) }},

		{"kv full and compute saturated", "compute-and-kv-bound", true, func(l *load) { computeBound(l); l.kv = constant(0.97) }},
		{"kv full and compute saturated: not kv-capacity-bound alone", "kv-capacity-bound", false, func(l *load) { computeBound(l); l.kv = constant(0.97) }},
		{"compute saturated, kv room", "compute-and-kv-bound", false, computeBound},
		{"kv full, steps small", "compute-and-kv-bound", false, kvBound},
		{"long prompts do not fit the free blocks at 60% usage", "kv-capacity-bound", true, func(l *load) {
			l.kv, l.waiting, l.running, l.prompt, l.busy = constant(0.6), constant(5), constant(1), 20000, 0.7
		}},
		{"short prompts fit the free blocks at 60% usage", "kv-capacity-bound", false, func(l *load) {
			l.kv, l.waiting, l.running, l.busy = constant(0.6), constant(5), constant(1), 0.7
		}},

		{"the GPU waits for the host through most of each step", "host-bound", true, func(l *load) {
			l.busy, l.host, l.running, l.waiting = 0.2, 0.78, constant(256), constant(20)
		}},
		{"the host takes a tenth of each step", "host-bound", false, func(l *load) { l.busy, l.host = 0.85, 0.1 }},
		{"host-heavy steps on an idle engine", "host-bound", false, func(l *load) { l.busy, l.host = 0.1, 0.2 }},
		{"vLLM + DCGM: the GPU idles while vLLM's steps run back to back", "host-bound", true, func(l *load) {
			l.busy, l.host, l.running, l.waiting, l.vllm, l.dcgm, l.steps = 0.2, 0.78, constant(256), constant(20), true, 0.2, 160
		}},

		{"pinned at max_num_seqs with room", "concurrency-cap", true, capped},
		{"below the cap", "concurrency-cap", false, func(l *load) { capped(l); l.maxSeqs = 16 }},
		{"pinned but kv full", "concurrency-cap", false, func(l *load) { capped(l); l.kv = constant(0.85) }},
		{"pinned, nothing waits", "concurrency-cap", false, func(l *load) { capped(l); l.waiting = constant(0) }},

		{"idle, nothing waits", "under-loaded", true, func(l *load) {}},
		{"busy executor on full steps", "under-loaded", false, func(l *load) { l.busy, l.steps, l.prompt = 0.95, 20, 150000 }},
		{"busy executor on small decode steps, nothing waits", "under-loaded", true, func(l *load) { l.busy = 0.95 }},
		{"a request waited", "under-loaded", false, func(l *load) { l.waiting = func(i int) float64 { return float64(i % 5 / 4) } }},

		{"two preemptions a second", "preemption-storm", true, func(l *load) { l.preempt, l.kv = 2, constant(0.95) }},
		{"a preemption every five seconds", "preemption-storm", false, func(l *load) { l.preempt = 0.2 }},

		{"prefill dominates", "prefill-bound", true, func(l *load) { l.prefill, l.decode = 0.4, 0.1 }},
		{"TTFT rising while generation holds", "prefill-bound", true, func(l *load) {
			l.prefill, l.decode, l.prompt = 0.2, 0.4, 600
			l.ttft = func(i int) float64 { return 0.02 * float64(1+i) }
		}},
		{"TTFT rising with throughput falling", "prefill-bound", false, func(l *load) {
			l.prefill, l.decode, l.prompt = 0.2, 0.4, 600
			l.ttft = func(i int) float64 { return 0.02 * float64(1+i) }
			l.genRate = func(i int) float64 { return 400 / float64(i) }
		}},
		{"decode dominates, flat TTFT", "prefill-bound", false, func(l *load) {}},
		{"prompt-dominated work, prefill a third of inference", "prefill-bound", true, func(l *load) { l.prompt, l.prefill, l.decode = 4000, 0.2, 0.4 }},
		{"prompt-dominated work, prefill a tenth of inference", "prefill-bound", false, func(l *load) { l.prompt, l.prefill, l.decode = 4000, 0.05, 0.45 }},

		{"ITL grows with batch width", "decode-bound", true, func(l *load) {
			l.running = func(i int) float64 { return float64(4 + 10*i) }
			l.itl = func(i int) float64 { return 0.004 + 0.0005*float64(4+10*i) }
		}},
		{"ITL grows with batch width under prefill interference", "decode-bound", false, func(l *load) {
			l.running = func(i int) float64 { return float64(4 + 10*i) }
			l.itl = func(i int) float64 { return 0.004 + 0.0005*float64(4+10*i) }
			l.prompt = 2000
		}},
		{"batch widens, ITL flat", "decode-bound", false, func(l *load) {
			l.running = func(i int) float64 { return float64(4 + 10*i) }
		}},
		{"ITL grows, batch flat", "decode-bound", false, func(l *load) {
			l.itl = func(i int) float64 { return 0.004 + 0.001*float64(i) }
		}},

		{"queue takes most of e2e", "queueing-dominates", true, func(l *load) { l.queue = 2 }},
		{"queue small", "queueing-dominates", false, func(l *load) {}},

		{"a third aborted", "client-timeouts", true, func(l *load) { l.aborts = 1 }},
		{"two aborts only", "client-timeouts", false, func(l *load) { l.aborts = 0.1; l.n = 20 }},

		{"caching off, prompt heavy", "prefix-caching", true, func(l *load) { l.prefix, l.prompt = false, 2000 }},
		{"caching off, generation heavy", "prefix-caching", false, func(l *load) { l.prefix = false }},
		{"caching on, hits evicted", "prefix-caching", true, func(l *load) { l.queries, l.hits, l.kv = 1000, 100, constant(0.95) }},
		{"caching on, hits with room", "prefix-caching", false, func(l *load) { l.queries, l.hits = 1000, 100 }},
		{"caching on, prompts mostly cache hits (agent sessions)", "prefix-reuse", true, func(l *load) { l.prompt, l.queries, l.hits = 2000, 1000, 800 }},
		{"caching on, an offload tier loads back most prompt tokens the prefix cache lost", "prefix-reuse", true, func(l *load) {
			l.prompt, l.cached, l.queries, l.hits, l.offloadGiB = 2000, 1600, 1000, 100, 32
		}},
		{"the same cached share without an offload tier: the prefix cache's hit rate is the reuse", "prefix-reuse", false, func(l *load) {
			l.prompt, l.cached, l.queries, l.hits = 2000, 1600, 1000, 100
		}},
		{"caching on, few hits", "prefix-reuse", false, func(l *load) { l.prompt, l.queries, l.hits = 2000, 1000, 100 }},
		{"caching on, hits but generation heavy", "prefix-reuse", false, func(l *load) { l.queries, l.hits = 1000, 800 }},

		{"the engine died mid-window", "engine-dead", true, func(l *load) {
			l.dead, l.deadAt, l.running, l.waiting = "executor_error", 10, constant(0), constant(0)
		}},
		{"the engine died and its load queues behind the dead server", "engine-dead", true, func(l *load) {
			l.dead, l.deadAt, l.busy, l.waiting = "step_timeout", 0, 1, constant(40)
		}},
		{"the engine serves", "engine-dead", false, func(l *load) {}},
		{"generating nothing with requests running", "metrics-stale", true, func(l *load) { l.gen, l.steps, l.running = 0, 0, constant(3) }},
		{"healthy counters", "metrics-stale", false, func(l *load) {}},
		{"the target restarted mid-window", "metrics-stale", true, func(l *load) { l.restartAt = 10 }},

		// In vLLM's clothes: no glassbox_* series, DCGM or vLLM's own
		// series standing in.
		{"vLLM + DCGM: kv full, queue, small steps", "kv-capacity-bound", true, func(l *load) { kvBound(l); l.vllm, l.dcgm = true, 0.6 }},
		{"vLLM alone: kv full, queue, small steps", "kv-capacity-bound", true, func(l *load) { kvBound(l); l.vllm = true }},
		{"vLLM + DCGM: busy, queue, kv room", "compute-bound", true, func(l *load) { computeBound(l); l.vllm, l.dcgm = true, 0.99 }},
		{"vLLM + DCGM: queue but idle GPU", "compute-bound", false, func(l *load) { computeBound(l); l.vllm, l.dcgm = true, 0.3 }},
		{"vLLM alone: pinned at an inferred cap", "concurrency-cap", true, func(l *load) { capped(l); l.vllm = true }},
		{"vLLM alone: a plateau held by a full KV cache is no cap", "concurrency-cap", false, func(l *load) {
			capped(l)
			l.vllm, l.kv, l.preempt = true, constant(0.95), 0.3
		}},
		{"vLLM + DCGM: idle GPU, nothing waits", "under-loaded", true, func(l *load) {
			l.vllm, l.dcgm, l.running = true, 0.2, func(i int) float64 { return float64(i % 2) }
		}},
		// Speculation: 50 verify passes a second of 4 drafts on a light
		// load, or 5120 on a wide one (20 steps a second: 1280 positions
		// scored per step) with the GPU busy.
		{"speculation off", "speculation-costly", false, func(l *load) {}},
		{"drafts mostly rejected", "speculation-costly", true, func(l *load) { l.speculating(50, 4, 0.1) }},
		{"drafts mostly accepted at a small batch", "speculation-costly", false, func(l *load) { l.speculating(50, 4, 0.7) }},
		{"wide verify steps on a busy GPU keep too little", "speculation-costly", true, func(l *load) {
			l.busy, l.steps, l.running = 0.99, 20, constant(512)
			l.speculating(5120, 4, 0.45)
		}},
		{"vLLM alone: drafts mostly rejected", "speculation-costly", true, func(l *load) { l.vllm = true; l.speculating(50, 4, 0.1) }},
		{"vLLM + DCGM: busy GPU on full steps", "under-loaded", false, func(l *load) { l.vllm, l.dcgm, l.steps, l.prompt = true, 0.95, 20, 150000 }},
	}
}

// TestEvidenceSources: a finding names where its evidence came from and
// how sure it is, and says so when two readings disagree.
func TestEvidenceSources(t *testing.T) {
	kv := func(l *load) { l.kv, l.waiting, l.running, l.busy = constant(0.95), constant(6), constant(8), 0.99 }
	for _, tc := range []struct {
		name    string
		modify  func(l *load)
		sources []string
		conf    string
	}{
		{"glassbox", kv, []string{"vllm", "glassbox"}, "high"},
		{"vLLM + DCGM, limits inferred", func(l *load) { kv(l); l.vllm, l.dcgm = true, 0.5 }, []string{"vllm", "dcgm", "inferred"}, "medium"},
		{"vLLM alone", func(l *load) { kv(l); l.vllm = true }, []string{"vllm", "vllm-estimate", "inferred"}, "low"},
	} {
		l := healthy()
		tc.modify(&l)
		f := find(t, diagnose(l.window(), nil), "kv-capacity-bound")
		if !slices.Equal(f.Sources, tc.sources) || f.Confidence != tc.conf {
			t.Errorf("%s: sources %v, confidence %s; want %v, %s", tc.name, f.Sources, f.Confidence, tc.sources, tc.conf)
		}
	}
	// DCGM says busy, vLLM's steps × their latency (20 steps/s × 6 ms)
	// says 12%: the doctor says they disagree.
	l := healthy()
	kv(&l)
	l.vllm, l.dcgm, l.steps = true, 0.97, 20
	if f := find(t, diagnose(l.window(), nil), "kv-capacity-bound"); !strings.Contains(f.Inference, "readings conflict") {
		t.Errorf("DCGM at 97%% against vLLM's 12%% estimate is not called a conflict: %s", f.Inference)
	}
	// The GPU's peaks from DCGM's modelName give MFU.
	l = healthy()
	l.busy, l.waiting, l.running, l.steps, l.prompt, l.gen, l.success = 0.99, constant(5), constant(20), 20, 150000, 100, 100
	l.vllm, l.dcgm, l.gpuName = true, 0.99, "NVIDIA H100 80GB HBM3"
	f := find(t, diagnose(l.window(), nil), "compute-bound")
	if !slices.Contains(f.Sources, "gpu-profile") || !strings.Contains(evidenceText(f), "MFU") {
		t.Errorf("compute-bound on an H100 by DCGM: sources %v, evidence %s", f.Sources, evidenceText(f))
	}
}

func evidenceText(f Finding) string {
	var b strings.Builder
	for _, e := range f.Evidence {
		b.WriteString(e.What + "; ")
	}
	return b.String()
}

func TestRules(t *testing.T) {
	covered := map[string][2]bool{}
	for _, tc := range ruleCases() {
		t.Run(tc.rule+"/"+tc.name, func(t *testing.T) {
			l := healthy()
			tc.modify(&l)
			rep := diagnose(l.window(), nil)
			got := slices.Contains(rep.Names(), tc.rule)
			if got != tc.fires {
				t.Errorf("%s fires = %v, want %v; findings %v", tc.rule, got, tc.fires, rep.Names())
			}
			for _, f := range rep.Findings {
				if f.Inference == "" || len(f.Evidence) == 0 || len(f.Changes) == 0 {
					t.Errorf("%s: a finding needs evidence, an inference and a change: %+v", f.Name, f)
				}
			}
		})
		c := covered[tc.rule]
		c[btoi(tc.fires)] = true
		covered[tc.rule] = c
	}
	for _, r := range rules() {
		if c := covered[r.name]; !c[0] || !c[1] {
			t.Errorf("rule %s lacks a positive or a negative synthetic test: %v", r.name, c)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestHealthyWindowHasNothingAboveInfo(t *testing.T) {
	rep := diagnose(healthy().window(), nil)
	if rep.Worst() != Info || rep.ExitCode() != 0 {
		t.Errorf("healthy window: worst %v, findings %v", rep.Worst(), rep.Names())
	}
}

func TestRecommendationsComputeFromEvidence(t *testing.T) {
	l := healthy()
	l.maxSeqs, l.running, l.waiting, l.kv, l.busy = 4, constant(4), constant(10), constant(0.05), 0.99
	rep := diagnose(l.window(), nil)
	f := find(t, rep, "concurrency-cap")
	// ⌈1.25 × (4 running + 10 waiting)⌉ = 18, under both the KV limit
	// (4 × 0.8 / 0.05 = 64) and the step-fill limit.
	if got := f.Changes[0]; got.Flag != "--max-num-seqs" || got.Value != "18" {
		t.Errorf("change = %+v, want --max-num-seqs 18", got)
	}
	rc := ReplicaConfig{MaxNumSeqs: 4}
	f.apply(&rc)
	if rc.MaxNumSeqs != 18 {
		t.Errorf("apply: max seqs %d, want 18", rc.MaxNumSeqs)
	}

	// Two data-parallel ranks, each with 4 running at its cap of 4 and 5
	// waiting: ⌈1.25 × 9⌉ = 12 a rank.
	l.running, l.engines = constant(8), 2
	if got := find(t, diagnose(l.window(), nil), "concurrency-cap").Changes[0]; got.Value != "12" {
		t.Errorf("two ranks: change = %+v, want --max-num-seqs 12 (a rank's)", got)
	}

	l = healthy()
	l.kv, l.waiting, l.running, l.busy = constant(0.95), constant(6), constant(8), 0.99
	f = find(t, diagnose(l.window(), nil), "kv-capacity-bound")
	// (8 + 6) / 8 = 1.75× the 1000 blocks of 2 MiB.
	if got := f.Changes[0]; got.Flag != "--kv-cache-memory-bytes" || got.Value != "3500M" {
		t.Errorf("change = %+v, want --kv-cache-memory-bytes 3500M", got)
	}
}

func find(t *testing.T, rep *Report, name string) Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no %s finding in %v", name, rep.Names())
	return Finding{}
}

// TestSaturationFromEverySignal: an engine flat out on full steps whose
// GPU counter reads low (host gaps, a tensor-parallel step) is compute
// saturated, said from the engine's activity and the queue's growth, and
// advised --async-scheduling for the gaps; steps full of a budget whose
// memory traffic is much of each step name the budget and the value to
// try, and answer the scheduler "yes (budget)".
func TestSaturationFromEverySignal(t *testing.T) {
	l := healthy()
	l.busy, l.waiting, l.running, l.steps, l.prompt, l.gen, l.success = 0.7, func(i int) float64 { return float64(5 + 10*i) }, constant(20), 20, 150000, 100, 100
	l.host = 0.3
	rep := diagnose(l.window(), nil)
	if q := rep.Questions.Compute; q.Answer != Yes || !strings.Contains(q.Summary, "the engine stepped 100% of the time") || !strings.Contains(q.Summary, "queue grew by 10.00 requests a second") {
		t.Errorf("compute answer: %s %q", q.Answer, q.Summary)
	}
	f := find(t, rep, "compute-bound")
	if !slices.ContainsFunc(f.Changes, func(c Change) bool { return c.Flag == "--async-scheduling" }) || !strings.Contains(f.Inference, "waited for the host 30% of each step") {
		t.Errorf("compute-bound on host gaps: changes %+v, inference %q", f.Changes, f.Inference)
	}
	rc := ReplicaConfig{}
	f.apply(&rc)
	if !rc.AsyncScheduling || rc.Replicas < 2 {
		t.Errorf("compute-bound's replay config: %+v", rc)
	}

	l = healthy()
	l.busy, l.waiting, l.running, l.steps, l.prompt, l.gen, l.success = 0.99, constant(5), constant(20), 60, 30000, 300, 10
	l.maxBatched, l.peakFLOPs, l.peakBW, l.flops, l.readBytes = 512, 989e12, 3.35e12, 16e9*30300, 60*15.6e9
	rep = diagnose(l.window(), nil)
	// MBU 0.28: at 1024 tokens the read would be 16% of a step, at 2048 9%.
	f = find(t, rep, "token-budget")
	if got := f.Changes[0]; got.Flag != "--max-num-batched-tokens" || got.Value != "2048" {
		t.Errorf("token-budget's change = %+v, want --max-num-batched-tokens 2048", got)
	}
	rc = ReplicaConfig{MaxNumBatchedTokens: 512}
	f.apply(&rc)
	if rc.MaxNumBatchedTokens != 2048 {
		t.Errorf("apply: budget %d, want 2048", rc.MaxNumBatchedTokens)
	}
	q := rep.Questions
	if q.Compute.Answer != No || q.Scheduler.Answer != Yes || q.Scheduler.Kind != "budget" || !strings.Contains(q.Compute.Summary, "--max-num-batched-tokens 2048") {
		t.Errorf("answers: compute %s %q; scheduler %s %s %q", q.Compute.Answer, q.Compute.Summary, q.Scheduler.Answer, q.Scheduler.Kind, q.Scheduler.Summary)
	}

	// Steps 63% full of the 512-token budget with nothing waiting: busy,
	// but more tokens fit in each step for little more time.
	l.prompt, l.readBytes, l.flops, l.waiting = 19000, 60*15.6e9*1.2, 16e9*19300, constant(0)
	if q := diagnose(l.window(), nil).Questions.Compute; q.Answer != No {
		t.Errorf("steps with room: compute %s %q, want no", q.Answer, q.Summary)
	}
	l.prompt, l.readBytes, l.flops, l.waiting = 30000, 60*15.6e9, 16e9*30300, constant(5)

	// vLLM + DCGM on an H100 whose FP8 weights only --quantization says:
	// MFU and the roofline against the FP8 peak.
	l.vllm, l.dcgm, l.gpuName, l.flops = true, 0.85, "NVIDIA H100 80GB HBM3", 16e9*30300*1.3
	fp8 := NewDiagnoser(DefaultThresholds(), Hints{Quantization: "fp8"}).Diagnose(l.window(), nil)
	if sig := fp8.Signals().Signal(SigPeakFLOPs); sig.Value != 1979e12 || !strings.Contains(sig.What, "FP8") {
		t.Errorf("--quantization fp8: peak %v (%s), want the H100's FP8 1979e12", sig.Value, sig.What)
	}
	if !slices.Contains(fp8.Names(), "token-budget") || slices.Contains(diagnose(l.window(), nil).Names(), "token-budget") {
		t.Errorf("FP8 steps: token-budget with --quantization fp8 only; findings %v, without it %v", fp8.Names(), diagnose(l.window(), nil).Names())
	}
	l.dcgm, l.gpuName, l.flops = 0, "", 16e9*30300

	// vLLM's series alone: the budget is inferred from the steps (none
	// past 512 tokens while prompts averaged 3000), and without the GPU's
	// peaks the doctor says whether it is the limit needs them.
	l.vllm = true
	rep = diagnose(l.window(), nil)
	if sig := rep.Signals().Signal(SigBudget); sig.Value != 512 || sig.Source != srcInferred {
		t.Errorf("vLLM alone: budget %v (%s), want 512 inferred", sig.Value, sig.Source)
	}
	f = find(t, rep, "compute-bound")
	if !slices.ContainsFunc(f.Changes, func(c Change) bool {
		return strings.Contains(c.Why, "512-token budget (inferred), not the GPU's arithmetic, is the limit needs the GPU's peak bandwidth")
	}) {
		t.Errorf("vLLM alone: compute-bound does not say the budget may be the limit: %+v", f.Changes)
	}
}

// TestDeadEngineSaysOnlyThat: a window whose engine died is read as that
// alone, whatever its load looked like (a queue behind a dead server is
// no capacity finding), with the reason's advice.
func TestDeadEngineSaysOnlyThat(t *testing.T) {
	l := healthy()
	l.busy, l.waiting, l.kv = 1, constant(40), constant(0.97)
	alive := diagnose(l.window(), nil).Names()
	l.dead, l.deadAt = "executor_panic", 5
	rep := diagnose(l.window(), nil)
	if !slices.Equal(rep.Names(), []string{"engine-dead"}) {
		t.Fatalf("findings %v (alive: %v), want engine-dead alone", rep.Names(), alive)
	}
	f := rep.Findings[0]
	if f.Severity != Critical || !strings.Contains(f.Inference, "executor_panic") || !strings.Contains(f.Changes[0].Why, "stack") {
		t.Errorf("finding %+v: want critical, naming the reason, advising on a panic", f)
	}
	// Whatever else fires on a dead engine's load: engine-dead excludes
	// every rule of the table but the scrape's own (metrics-stale).
	table := rules()
	for _, r := range table {
		if r.name != "engine-dead" && r.name != "metrics-stale" && !slices.Contains(table[0].excludes, r.name) {
			t.Errorf("%s (first in the table) does not exclude %s", table[0].name, r.name)
		}
	}
}
