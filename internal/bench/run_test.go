package bench

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

const ms = time.Millisecond

// writeDataset writes a custom JSONL file with one line per prompt.
func writeDataset(t *testing.T, prompts []string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range prompts {
		line, _ := json.Marshal(map[string]string{"prompt": p})
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "prompts.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runFake runs bench with cfg against a fake server playing scripts, in a
// synctest bubble: the fake clock makes every timing exactly the scripted one.
func runFake(t *testing.T, scripts map[string]script, cfg Config) *Result {
	t.Helper()
	res, _ := runFakeServer(t, scripts, cfg)
	return res
}

// runFakeServer is runFake that also returns the fake server.
func runFakeServer(t *testing.T, scripts map[string]script, cfg Config) (*Result, *fakeServer) {
	t.Helper()
	var prompts []string
	for p := range scripts {
		prompts = append(prompts, p)
	}
	slices.Sort(prompts)
	cfg.Dataset = workload.DatasetConfig{Name: "custom", Path: writeDataset(t, prompts), CustomOutputLen: 16}
	cfg.NumPrompts = len(prompts)
	cfg.BaseURL = "http://fake"
	var res *Result
	var err error
	fake := newFakeServer(scripts)
	synctest.Test(t, func(t *testing.T) {
		client, stop := startPipeServer(fake.handler())
		defer stop()
		cfg.HTTPClient = client
		res, err = Run(context.Background(), cfg)
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, fake
}

// ref is a reference numpy: mean, population std, linear percentile.
func refStats(v []float64, p float64) (mean, std, pct float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	for _, x := range s {
		mean += x
	}
	mean /= float64(len(s))
	for _, x := range s {
		std += (x - mean) * (x - mean)
	}
	std = math.Sqrt(std / float64(len(s)))
	rank := p / 100 * float64(len(s)-1)
	i := int(rank)
	if i+1 < len(s) {
		pct = s[i] + (s[i+1]-s[i])*(rank-float64(i))
	} else {
		pct = s[i]
	}
	return
}

func msOf(ds ...time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / float64(ms)
	}
	return out
}

var approx = cmpopts.EquateApprox(0, 1e-9)

// TestMetricsMatchTheScript sends five requests at once to a fake server
// whose chunk timings are scripted, and checks every metric against the
// value the script implies by vLLM's definitions.
func TestMetricsMatchTheScript(t *testing.T) {
	for _, backend := range []string{"openai", "openai-chat"} {
		t.Run(backend, func(t *testing.T) {
			scripts := map[string]script{
				"prompt a": {ttft: 100 * ms, gaps: []time.Duration{20 * ms, 20 * ms, 20 * ms}, promptTokens: 10},
				"prompt b": {ttft: 200 * ms, gaps: []time.Duration{10 * ms, 30 * ms}, promptTokens: 20},
				"prompt c": {ttft: 300 * ms, promptTokens: 30}, // one token: no TPOT
				"prompt d": {ttft: 400 * ms, gaps: []time.Duration{50 * ms, 50 * ms, 50 * ms, 50 * ms}, promptTokens: 40},
				"prompt e": {status: 500},
			}
			ttft, tpot, e2el := 250.0, 25.0, 1000.0
			res := runFake(t, scripts, Config{Backend: backend, Goodput: SLOs{TTFT: &ttft, TPOT: &tpot, E2EL: &e2el},
				PercentileMetrics: []string{"ttft", "tpot", "itl", "e2el"}, Percentiles: []float64{50, 90, 99}})
			m := res.Passes[0].Metrics

			// Expected values, from the scripts alone.
			var wantTTFT, wantTPOT, wantITL, wantE2EL []float64
			in, out, good, last := 0, 0, 0, time.Duration(0)
			for _, sc := range scripts {
				if sc.status != 0 {
					continue
				}
				lat := sc.ttft
				for _, g := range sc.gaps {
					lat += g
				}
				n := len(sc.gaps) + 1
				in, out = in+sc.promptTokens, out+n
				wantTTFT = append(wantTTFT, msOf(sc.ttft)...)
				wantE2EL = append(wantE2EL, msOf(lat)...)
				wantITL = append(wantITL, msOf(sc.gaps...)...)
				tp := 0.0
				if n > 1 {
					tp = float64(lat-sc.ttft) / float64(ms) / float64(n-1)
					wantTPOT = append(wantTPOT, tp)
				}
				if float64(sc.ttft)/float64(ms) <= ttft && tp <= tpot && float64(lat)/float64(ms) <= e2el {
					good++
				}
				last = max(last, lat+usageDelay) // the usage chunk and [DONE] end the run, not the latency
			}
			dur := last.Seconds()
			if got, want := m.Duration, last; got != want {
				t.Errorf("duration %v, want %v", got, want)
			}
			scalars := map[string][2]float64{
				"completed":              {float64(m.Completed), 4},
				"failed":                 {float64(m.Failed), 1},
				"total_input_tokens":     {float64(m.TotalInput), float64(in)},
				"total_output_tokens":    {float64(m.TotalOutput), float64(out)},
				"request_throughput":     {m.RequestThroughput, 4 / dur},
				"request_goodput":        {*m.RequestGoodput, float64(good) / dur},
				"output_throughput":      {m.OutputThroughput, float64(out) / dur},
				"total_token_throughput": {m.TotalTokenThroughput, float64(in+out) / dur},
				// every token chunk lands in the first second; all four overlap from t=0
				"max_output_tokens_per_s": {m.MaxOutputTokensPerS, float64(out)},
				"max_concurrent_requests": {float64(m.MaxConcurrentRequests), 4},
				"good requests":           {float64(m.Good), 2},
			}
			for k, v := range scalars {
				if !cmp.Equal(v[0], v[1], approx) {
					t.Errorf("%s = %v, want %v", k, v[0], v[1])
				}
			}
			for name, want := range map[string][]float64{"ttft": wantTTFT, "tpot": wantTPOT, "itl": wantITL, "e2el": wantE2EL} {
				d := m.Dists[name]
				mean, std, _ := refStats(want, 0)
				_, _, med := refStats(want, 50)
				if diff := cmp.Diff(sorted(want), sorted(d.Values), approx); diff != "" {
					t.Errorf("%s values (-want +got):\n%s", name, diff)
				}
				if !cmp.Equal([]float64{d.Mean, d.Median, d.Std}, []float64{mean, med, std}, approx) {
					t.Errorf("%s mean/median/std = %v/%v/%v, want %v/%v/%v", name, d.Mean, d.Median, d.Std, mean, med, std)
				}
				for _, p := range d.Percentiles {
					if _, _, w := refStats(want, p.P); !cmp.Equal(p.Value, w, approx) {
						t.Errorf("p%v %s = %v, want %v", p.P, name, p.Value, w)
					}
				}
			}
			checkServerView(t, res.Passes[0].Server, scripts)
			checkJSONKeys(t, res)
		})
	}
}

func sorted(v []float64) []float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s
}

// checkServerView compares the scraped deltas with what the fake served.
func checkServerView(t *testing.T, v *ServerView, scripts map[string]script) {
	t.Helper()
	if v == nil {
		t.Fatal("no server view from the fake's /metrics")
	}
	var n, gen, prompt, ttftSum float64
	for _, sc := range scripts {
		if sc.status == 0 {
			n, gen, prompt, ttftSum = n+1, gen+float64(len(sc.gaps)+1), prompt+float64(sc.promptTokens), ttftSum+sc.ttft.Seconds()
		}
	}
	got := []float64{v.RequestSuccess, v.GenerationTokens, v.PromptTokens, v.TTFT.Count, v.TTFT.Mean}
	want := []float64{n, gen, prompt, n, ttftSum / n * 1000}
	if !cmp.Equal(got, want, approx) {
		t.Errorf("server view success/gen/prompt/ttft count/ttft mean = %v, want %v", got, want)
	}
}

// checkJSONKeys checks the result file has vLLM's keys with the metrics' values.
func checkJSONKeys(t *testing.T, res *Result) {
	t.Helper()
	b, err := res.JSON(true)
	if err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatalf("result is not JSON: %v", err)
	}
	m := res.Passes[0].Metrics
	want := map[string]float64{
		"completed": float64(m.Completed), "failed": float64(m.Failed), "duration": m.Duration.Seconds(),
		"total_input_tokens": float64(m.TotalInput), "total_output_tokens": float64(m.TotalOutput),
		"request_throughput": m.RequestThroughput, "request_goodput": *m.RequestGoodput, "output_throughput": m.OutputThroughput,
		"total_token_throughput": m.TotalTokenThroughput, "max_output_tokens_per_s": m.MaxOutputTokensPerS,
		"max_concurrent_requests": float64(m.MaxConcurrentRequests),
		"mean_ttft_ms":            m.Dists["ttft"].Mean, "median_tpot_ms": m.Dists["tpot"].Median, "std_itl_ms": m.Dists["itl"].Std,
		"p99_e2el_ms": m.Dists["e2el"].Percentiles[2].Value, "p50_ttft_ms": m.Dists["ttft"].Percentiles[0].Value,
	}
	for k, w := range want {
		if g, ok := j[k].(float64); !ok || !cmp.Equal(g, w, approx) {
			t.Errorf("JSON %s = %v, want %v", k, j[k], w)
		}
	}
	for _, k := range []string{"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
		"request_rate", "burstiness", "max_concurrency", "input_lens", "output_lens", "ttfts", "itls", "start_times", "errors", "server"} {
		if _, ok := j[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if j["request_rate"] != "inf" || j["model_id"] != "fake-model" {
		t.Errorf("request_rate %v, model_id %v; want inf and the server's first model", j["request_rate"], j["model_id"])
	}
}

// TestWarmupsAreSentButNotCounted sends three warm-up requests first: the
// server sees them, the metrics and the server view do not.
func TestWarmupsAreSentButNotCounted(t *testing.T) {
	scripts := map[string]script{
		"prompt a": {ttft: 10 * ms, gaps: []time.Duration{5 * ms}, promptTokens: 3},
		"prompt b": {ttft: 20 * ms, gaps: []time.Duration{5 * ms}, promptTokens: 4},
	}
	res, fake := runFakeServer(t, scripts, Config{NumWarmups: 3})
	served := testutil.ToFloat64(fake.success)
	p := res.Passes[0]
	if p.Metrics.Completed != 2 || served != 5 || p.Server.RequestSuccess != 2 {
		t.Errorf("completed %d, server served %v, server view %v; want 2, 5 (with 3 warm-ups), 2",
			p.Metrics.Completed, served, p.Server.RequestSuccess)
	}
}
