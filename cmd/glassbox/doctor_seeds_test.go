package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/glassbox-llm/glassbox/internal/corpus"
	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/metrics"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/simulate"
	"github.com/glassbox-llm/glassbox/internal/source"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// virtualWindows runs plan on rc in virtual time and reads the replica
// every interval from skip to until, as the doctor would in each of the
// clothes.
func virtualWindows(t *testing.T, rc replica.Config, plan *workload.Plan, skip, until, interval time.Duration) (map[string]*doctor.Window, *simulate.Result) {
	t.Helper()
	rc.DCGM = true
	ws := map[string]*doctor.Window{}
	for _, v := range corpus.Clothes {
		ws[v] = doctor.NewWindow("simulate", "virtual replica ("+v+")")
	}
	var first time.Time
	var errs []error
	res, err := simulate.Run(context.Background(), simulate.Config{Replica: rc, Plan: plan, ObserveInterval: interval,
		Observe: func(at time.Time, in simulate.Instance) {
			g, dcgm := in.Gatherer, in.DCGM
			if first.IsZero() {
				first = at
			}
			if at.Sub(first) < skip || at.Sub(first) > until {
				return
			}
			own, err1 := text(g)
			vllm, err2 := text(metrics.VLLMOnly(g))
			rec := httptest.NewRecorder()
			dcgm.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			for view, body := range map[string]string{"glassbox": own, "vllm": vllm, "vllm+dcgm": vllm + rec.Body.String()} {
				sc, err := promtext.Parse(strings.NewReader(body))
				if err != nil {
					errs = append(errs, err)
					continue
				}
				source.Append(ws[view], at, sc)
			}
			errs = append(errs, err1, err2)
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return ws, res
}

func text(g prometheus.Gatherer) (string, error) {
	mfs, err := g.Gather()
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// TestSeedsCase is the fleet the seeds describe, one replica of it: an
// A100-80G with --max-num-seqs 64 whose KV cache holds about half that,
// running stuck near 32, KV usage near 95%, a few hundred preemptions per
// ten minutes, the GPU active under half the time. Read only through
// vLLM's series and dcgm-exporter's (or vLLM's alone), the doctor must
// name it KV-capacity bound, with the seeds' remedies weighed.
func TestSeedsCase(t *testing.T) {
	m, err := profiles.LookupModel("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	const ctx = 3400 // prompt 3000 + 400 output
	rc := replica.Config{Sim: sim.Config{Hardware: "a100-80g", Model: "llama-3.1-8b", HostOverhead: 50 * time.Millisecond},
		MaxNumSeqs: 64, MaxModelLen: 4096, BlockSize: 16, MaxQueuedRequests: 10000, GPUMemoryUtilization: 0.9,
		KVCacheMemoryBytes: 32 * ctx * 4 / 5 * m.KVBytesPerToken(1)}
	samples, err := workload.LoadSamples(context.Background(), workload.DatasetConfig{Name: "random", RandomInputLen: 3000, RandomOutputLen: 400, RandomRangeRatio: 0.3},
		100, simulate.Tokenizer(), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	plan := workload.OpenLoop(samples, workload.NewArrivals(0, 15*time.Minute, 2.0, 1, nil, rng), 0, 15*time.Minute)
	ws, res := virtualWindows(t, rc, plan, 5*time.Minute, 15*time.Minute, 5*time.Second)
	t.Logf("simulated %v in %v", res.Duration.Round(time.Second), res.Wall.Round(time.Millisecond))
	// The seeds' readings, from the series a vLLM fleet has.
	w := ws["vllm+dcgm"]
	mean := func(key string) float64 {
		ps := w.Gauge(key)
		sum := 0.0
		for _, p := range ps {
			sum += p.V
		}
		return sum / float64(max(len(ps), 1))
	}
	kv, running, engine := mean("vllm:kv_cache_usage_perc"), mean("vllm:num_requests_running"), mean("DCGM_FI_PROF_GR_ENGINE_ACTIVE")
	per10 := w.Increase("vllm:num_preemptions_total") / w.Duration().Minutes() * 10
	t.Logf("KV %.2f, running %.1f, %.0f preemptions per 10 min, DCGM engine active %.2f", kv, running, per10, engine)
	if kv < 0.9 || running < 25 || running > 40 || per10 < 100 || per10 > 400 || engine < 0.35 || engine > 0.55 {
		t.Errorf("the simulation is not the seeds' case: KV %.2f, running %.1f, %.0f preemptions / 10 min, DCGM %.2f", kv, running, per10, engine)
	}
	for _, view := range corpus.Clothes {
		w := ws[view]
		rep := defaults.Diagnose(w, nil)
		var b strings.Builder
		_ = rep.WriteText(&b)
		t.Logf("read as %s:\n%s", view, b.String())
		names := rep.Names()
		if !slices.Contains(names, "kv-capacity-bound") || slices.Contains(names, "concurrency-cap") || slices.Contains(names, "compute-bound") {
			t.Errorf("%s: findings %v, want kv-capacity-bound and neither concurrency-cap nor compute-bound", view, names)
			continue
		}
		var changes strings.Builder
		for _, f := range rep.Findings {
			if f.Name == "kv-capacity-bound" {
				for _, c := range f.Changes {
					changes.WriteString(c.Flag + " " + c.Why + "\n")
				}
			}
		}
		for _, want := range []string{"prefix caching", "--block-size", "--max-num-seqs", "--kv-cache-memory-bytes"} {
			if !strings.Contains(changes.String(), want) {
				t.Errorf("%s: the KV finding's remedies do not weigh %q:\n%s", view, want, changes.String())
			}
		}
	}
}
