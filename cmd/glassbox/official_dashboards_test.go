package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/simulate"
)

// officialUnavailable are the queries of vLLM's official dashboards
// (../shared/compat/vllm-official) no glassbox answers, by a substring of
// the query, with why; docs/monitoring.md names them.
var officialUnavailable = map[string]string{
	"vllm:nixl_":                     "NixlConnector's KV transfers between instances: glassbox has no KV connector across instances",
	"sleep_mode_operation":           "sleep mode: glassbox never sleeps",
	"rl_weight_update":               "RL weight updates: glassbox does not reload weights while serving",
	"vllm:simple_kv_offload_":        "the SimpleCPUOffloadConnector: glassbox offloads as the OffloadingConnector does",
	"vllm:kv_offload_stores_skipped": "vLLM registers it only with a store_threshold of 2 or more, which glassbox does not take",
	"kv_offload_lookup_async_delay":  "a glassbox look-up never defers (a block still being stored is not a hit), so the async delay has no observation",
	"vllm:mm_cache_":                 "the multi-modal cache's hit rate: glassbox serves text models, whose counters stay 0 as vLLM's do (a ratio over no queries has no value)",
}

// simulatedUnavailable are, beside those, the queries the simulator's
// recording cannot answer, with why: it records the engines' metrics in
// virtual time, where no API server process runs.
var simulatedUnavailable = map[string]string{
	"process_":     "the API server process's CPU, memory, file descriptors and start time: no process runs in virtual time",
	"http_request": "the API server's HTTP families: glassbox simulate submits to the engines without an HTTP server",
}

// officialServeArgs turn on every optional row: two data-parallel ranks,
// each with a KV cache of 256 blocks of 16 tokens beside a 2 GiB offload
// tier (1,024 blocks of Llama-3.1-8B), every block's residency sampled,
// speculative decoding at synthetic rates, and a LoRA adapter.
var officialServeArgs = []string{"--max-model-len", "1024", "--kv-cache-memory-bytes", fmt.Sprint(256 * 16 * 131072),
	"--data-parallel-size", "2", "--kv-offloading-size", "2", "--kv-cache-metrics", "--kv-cache-metrics-sample", "1",
	"--speculative-config", `{"method":"ngram","num_speculative_tokens":2,"rejection_sample_method":"synthetic","synthetic_acceptance_rates":[0.8,0.5]}`,
	"--enable-lora", "--lora-modules", "adapter=/adapters/adapter", "--max-loras", "1"}

// officialVars are the dashboards' variables as a user viewing everything
// sets them.
func officialVars(model string) map[string]string {
	return map[string]string{"job": ".+", "instance": ".+", "engine": ".+", "model_name": model, "Deployment_id": model,
		"ttft_slo": "1.0", "tpot_slo": "0.1", "agg_method": "avg"}
}

// TestOfficialDashboards runs vLLM's newest official dashboards unchanged
// against glassbox: a real Prometheus scrapes 'glassbox serve' (two
// data-parallel ranks with an offload tier and every optional family) under
// a load whose prefixes outgrow the GPU cache, and loads what 'glassbox
// simulate' recorded of the same server; every panel query of every
// dashboard must return data in both, but those of officialUnavailable,
// which must return none.
func TestOfficialDashboards(t *testing.T) {
	reftest.Long(t, "serve and simulate under vLLM's official dashboards in a real Prometheus")
	if testing.Short() {
		t.Skip("starts Prometheus; skipped with -short")
	}
	promBin := stackTool(t, "prometheus")
	const model = "llama-3.1-8b"
	queries, skipped := dashboardQueries(t, reftest.Path(t, "compat", "vllm-official"), 6, officialUnavailable, officialVars(model))
	t.Logf("%d panel and variable queries in vLLM's official dashboards, %d of them for features glassbox lacks", len(queries)+len(skipped), len(skipped))

	t.Run("serve", func(t *testing.T) {
		base, _ := serveTest(t, append([]string{"--sim-time-scale", "1"}, officialServeArgs...)...)
		target := strings.TrimPrefix(base, "http://")
		promURL := startPrometheus(t, promBin, target)
		// Forty prefixes of 50 words (about 190 tokens, 12 blocks) in
		// turn: more than a rank's 256 blocks hold, all of them in its
		// 1,024-block offload tier; a tenth to the adapter.
		ctx, stopLoad := context.WithCancel(context.Background())
		wait := loadLoop(ctx, base, 8, 400, func(w, i int) map[string]any {
			m := model
			if i%10 == 9 {
				m = "adapter"
			}
			return map[string]any{"model": m, "prompt": words(50, 13*((w*5+i*7)%40)) + words(8, w*10000+i), "max_tokens": 4 + i%12}
		})
		pending := answerAll(queries, func(q string) bool { return answers(promURL, q) }, 90*time.Second)
		stopLoad()
		okN, failN := wait()
		t.Logf("%d requests answered, %d failed; %d of %d queries of vLLM's official dashboards returned data",
			okN, failN, len(queries)-len(pending), len(queries))
		reportUnanswered(t, pending, skipped, func(q string) bool { return answers(promURL, q) })
	})

	t.Run("simulate", func(t *testing.T) {
		dir := t.TempDir()
		om := filepath.Join(dir, "metrics.om")
		args := append([]string{"simulate", "--sim-model", model, "--dataset-name", "prefix_repetition",
			"--prefix-repetition-num-prefixes", "40", "--prefix-repetition-prefix-len", "190", "--prefix-repetition-suffix-len", "16",
			"--prefix-repetition-output-len", "12", "--num-prompts", "3000", "--request-rate", "20", "--seed", "1",
			"--metrics-out", om, "--metrics-interval", "1s"}, officialServeArgs...)
		var out strings.Builder
		if err := run(context.Background(), args, &out, &out); err != nil {
			t.Fatalf("glassbox simulate: %v\n%s", err, out.String())
		}
		importOpenMetrics(t, om, dir)
		prom := startPromOn(t, dir)
		end := lastSample(t, om)
		at := func(q string) bool {
			s, err := promQueryAt(prom.url, q, end)
			return err == nil && slices.ContainsFunc(s, func(x promSample) bool { return !math.IsNaN(x.Value) })
		}
		use, more := splitQueries(queries, simulatedUnavailable)
		pending := answerAll(use, at, 10*time.Second)
		t.Logf("%d of %d queries of vLLM's official dashboards returned data at the simulated run's end (%v); %d are the API server's",
			len(use)-len(pending), len(use), end, len(more))
		reportUnanswered(t, pending, append(slices.Clone(skipped), more...), at)
	})
}

// splitQueries takes out the queries with a key of unavailable.
func splitQueries(queries []panelQuery, unavailable map[string]string) (use, skipped []panelQuery) {
	for _, q := range queries {
		if slices.ContainsFunc(slices.Collect(maps.Keys(unavailable)), func(k string) bool { return strings.Contains(q.expr, k) }) {
			skipped = append(skipped, q)
		} else {
			use = append(use, q)
		}
	}
	return use, skipped
}

// answerAll asks every query until each has answered or the time is up,
// and returns those that never did.
func answerAll(queries []panelQuery, answers func(string) bool, within time.Duration) []panelQuery {
	pending := slices.Clone(queries)
	for deadline := time.Now().Add(within); ; time.Sleep(time.Second) {
		pending = slices.DeleteFunc(pending, func(q panelQuery) bool { return answers(q.expr) })
		if len(pending) == 0 || time.Now().After(deadline) {
			return pending
		}
	}
}

func reportUnanswered(t *testing.T, pending, skipped []panelQuery, answers func(string) bool) {
	sort.Slice(pending, func(i, j int) bool { return pending[i].file+pending[i].panel < pending[j].file+pending[j].panel })
	for _, q := range pending {
		t.Errorf("%s: panel %q: query returned no data: %s", q.file, q.panel, q.expr)
	}
	for _, s := range skipped {
		if answers(s.expr) {
			t.Errorf("%s: %q is listed as unavailable but returns data: drop it from officialUnavailable", s.file, s.expr)
		}
	}
}

// lastSample is the time of the last reading in an OpenMetrics file of
// glassbox simulate (its readings are at whole seconds from
// simulate.Epoch).
func lastSample(t *testing.T, om string) time.Time {
	raw, err := os.ReadFile(om)
	if err != nil {
		t.Fatal(err)
	}
	last := simulate.Epoch
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || strings.HasPrefix(l, "#") {
			continue
		}
		var sec float64
		if _, err := fmt.Sscan(f[len(f)-1], &sec); err == nil {
			if ts := time.Unix(0, int64(sec*1e9)).UTC(); ts.After(last) {
				last = ts
			}
		}
	}
	return last
}
