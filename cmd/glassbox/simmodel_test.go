package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// TestSimModelFromHub: --sim-model hf://OWNER/REPO fetches the
// repository's config.json from the hub (here a fake one) into the cache
// and simulates its shape; a second run reads the cache.
func TestSimModelFromHub(t *testing.T) {
	cfg, err := os.ReadFile(reftest.Path(t, "reference", "models", "mistral-nemo-instruct-2407", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fetched int
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mistralai/Mistral-Nemo-Instruct-2407/resolve/main/config.json" {
			http.NotFound(w, r)
			return
		}
		fetched++
		http.ServeContent(w, r, "config.json", time.Time{}, bytes.NewReader(cfg))
	}))
	t.Cleanup(hub.Close)
	t.Setenv("HF_ENDPOINT", hub.URL)
	t.Setenv("GLASSBOX_CACHE", t.TempDir())
	for range 2 {
		r := stepJSON(t, "--sim-model", "hf://mistralai/Mistral-Nemo-Instruct-2407", "--sim-hardware", "h100", "--decode", "8x1024")
		if r.Model != "Mistral-Nemo-Instruct-2407" || r.DurationMS <= 0 {
			t.Errorf("priced %q: %.3f ms", r.Model, r.DurationMS)
		}
	}
	if fetched != 1 {
		t.Errorf("the hub served config.json %d times, want once (then the cache)", fetched)
	}
	err = run(context.Background(), []string{"simulate", "step", "--decode", "1x8", "--sim-model", "hf://nobody/none"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--sim-model") || !strings.Contains(err.Error(), "no such file on the hub") {
		t.Errorf("a repository the hub lacks: %v", err)
	}
}

// TestSimModelConfigPath: a dense model's config.json, a path, prices
// as the built-in of the same shape does.
func TestSimModelConfigPath(t *testing.T) {
	dir := reftest.Path(t, "reference", "models", "llama-3.1-8b-instruct")
	for _, arg := range []string{dir, filepath.Join(dir, "config.json")} {
		got := stepJSON(t, "--sim-model", arg, "--decode", "64x2048", "--prefill", "512@0")
		want := stepJSON(t, "--sim-model", "llama-3.1-8b", "--decode", "64x2048", "--prefill", "512@0")
		if got.DurationMS != want.DurationMS || got.FLOPs != want.FLOPs || got.Model != "llama-3.1-8b-instruct" {
			t.Errorf("%s: %s %.4f ms, %.4g FLOP; the built-in %.4f ms, %.4g FLOP", arg, got.Model, got.DurationMS, got.FLOPs, want.DurationMS, want.FLOPs)
		}
	}
}

// TestSimulateEveryReferenceModel: `glassbox simulate --sim-model
// <config.json>` runs for every file of ../shared/reference/models (dense,
// mixtures of experts, MLA, FP8), each on the fewest H100s (else H200s)
// that hold it, and `simulate step --json` shows what it priced.
func TestSimulateEveryReferenceModel(t *testing.T) {
	dir := reftest.Path(t, "reference", "models")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			cfg := filepath.Join(dir, e.Name(), "config.json")
			m, err := profiles.ReadConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			hw, tp := fits(t, m)
			where := []string{"--sim-model", cfg, "--sim-hardware", hw, "--tensor-parallel-size", strconv.Itoa(tp)}
			out := filepath.Join(t.TempDir(), "r.json")
			var log strings.Builder
			err = run(context.Background(), append([]string{"simulate", "--random-input-len", "300", "--random-output-len", "30",
				"--num-prompts", "30", "--request-rate", "10", "--max-model-len", "4096", "--result-filename", out}, where...), &log, io.Discard)
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			if r := resultJSON(t, out); r["completed"] != 30.0 || r["failed"] != 0.0 {
				t.Errorf("%v completed, %v failed", r["completed"], r["failed"])
			}
			s := stepJSON(t, append(where, "--decode", "32x1000", "--prefill", "512@0")...)
			if (s.MoE != nil) != (m.MoE != nil) || s.MoE != nil && !(s.MoE.ExpertsTouched >= float64(m.MoE.TopK) && s.MoE.ExpertGEMMMS > 0 && s.MoE.ExpertGEMMMS < s.Families["gemm"]) {
				t.Errorf("priced experts %+v of %+v", s.MoE, m.MoE)
			}
			if (s.Shape.Attention == "mla") != (m.MLA != nil) || s.Shape.KVBytesPerToken != m.KVBytesPerToken(tp) {
				t.Errorf("attention %+v", s.Shape)
			}
		})
	}
}

// fits is the first of H100 and H200, at the fewest GPUs, that holds m
// with room for its KV cache.
func fits(t *testing.T, m profiles.Model) (string, int) {
	t.Helper()
	for _, name := range []string{"h100", "h200"} {
		hw, _ := profiles.LookupHardware(name)
		for _, tp := range []int{1, 2, 4, 8} {
			if m.CheckTP(tp) != nil {
				continue
			}
			if kv, err := costmodel.KVCacheBytes(hw, m, tp, 0.92, 0); err == nil && kv > 4<<30 {
				return name, tp
			}
		}
	}
	t.Fatalf("%s fits no 8 GPUs", m.Name)
	return "", 0
}

// TestSimulateStepPublishedShapes: DeepSeek-V3 and gpt-oss-120b, built in
// from their published shapes, price with what makes them what they are
// shown: MLA's latent cache and FP8 experts, gpt-oss's windows and mxfp4
// experts, the experts touched and their grouped GEMMs.
func TestSimulateStepPublishedShapes(t *testing.T) {
	v3 := stepJSON(t, "--sim-model", "deepseek-v3", "--sim-hardware", "h200", "--tensor-parallel-size", "8", "--decode", "64x4096")
	if v3.Shape.Attention != "mla" || v3.Shape.MLALatent != 576 || v3.Shape.KVBytesPerToken != 70272 || v3.Weights != "fp8" {
		t.Errorf("DeepSeek-V3: %+v, %s weights", v3.Shape, v3.Weights)
	}
	if e := v3.MoE; e == nil || e.Experts != 256 || e.TopK != 8 || e.Layers != 58 || e.SharedWidth != 2048 ||
		!(e.ExpertsTouched > 8 && e.ExpertsTouched < 256) || !(e.ExpertGEMMMS > 0) || !(e.RoutingMS > 0) {
		t.Errorf("DeepSeek-V3's experts: %+v", v3.MoE)
	}
	oss := stepJSON(t, "--sim-model", "gpt-oss-120b", "--sim-hardware", "h100", "--decode", "16x20000")
	if oss.Shape.SlidingWindow != 128 || oss.Shape.SlidingWindowLayers != 18 || oss.Weights != "bf16 attention, mxfp4 experts" {
		t.Errorf("gpt-oss-120b: %+v, %s weights", oss.Shape, oss.Weights)
	}
	if e := oss.MoE; e == nil || e.Experts != 128 || e.TopK != 4 || !(e.ExpertsTouched > 4 && e.ExpertsTouched <= 64) {
		t.Errorf("gpt-oss-120b's experts: %+v", oss.MoE)
	}
	ep := stepJSON(t, "--sim-model", "mixtral-8x7b", "--sim-hardware", "h100", "--tensor-parallel-size", "4", "--enable-expert-parallel", "--decode", "1x100")
	tp := stepJSON(t, "--sim-model", "mixtral-8x7b", "--sim-hardware", "h100", "--tensor-parallel-size", "4", "--decode", "1x100")
	if ep.MoE == nil || ep.MoE.ExpertParallel != 4 || tp.MoE.ExpertParallel != 0 || ep.MoE.ExpertGEMMMS < tp.MoE.ExpertGEMMMS {
		t.Errorf("one token under EP 4: %+v; under TP 4: %+v", ep.MoE, tp.MoE)
	}
}

// TestTableAPrimeMoERows replays table A′'s mixture-of-experts runs
// (../shared/reference/calibration/README.md: Mixtral-8x7B at TP 2 and 4,
// Mixtral-8x22B at TP 8, Llama-4-Scout FP8 at TP 2; vLLM 0.15.1 on H100)
// as their inference-perf ran them, on the H100 profile with its stated
// MoE terms (nothing fitted to these rows), and holds them to the errors
// docs/simulator.md publishes: E2E and TPOT within 12 %, TTFT within
// 20 %. Exp 9 ran with CPU KV offload, which is not modelled.
func TestTableAPrimeMoERows(t *testing.T) {
	reftest.Long(t, "four 20-minute MoE runs of table A′ in virtual time")
	reftest.Path(t, "reference", "calibration", "README.md")
	dir := t.TempDir()
	profile := func(name string, r1, r2 float64) string {
		path := filepath.Join(dir, name+".yaml")
		y := fmt.Sprintf(`load: {type: constant, stages: [{rate: %v, duration: 600}, {rate: %v, duration: 600}]}
api: {type: completion, streaming: true}
server: {type: vllm, ignore_eos: true}
data: {type: shared_prefix, shared_prefix: {num_unique_system_prompts: 9, num_users_per_system_prompt: 5, system_prompt_len: 100, question_len: 447, output_len: 248, enable_multi_turn_chat: true}}
`, r1, r2)
		if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	general, lite := profile("general", 8, 20), profile("lite", 2.5, 6)
	for _, row := range []struct {
		exp, model, config string
		tp                 int
		ttft, e2e, tpot    float64 // measured
	}{
		{"exp9", "mixtral-8x7b", general, 2, 68.9, 5038.6, 20.12},
		{"exp31", "mixtral-8x7b", general, 4, 37.0, 2799.5, 11.18},
		{"exp49", "mixtral-8x22b", general, 8, 61.8, 4825.6, 19.29},
		{"exp17", "llama-4-scout-17b-16e-fp8", lite, 2, 62.7, 5270.1, 21.08},
	} {
		out := filepath.Join(dir, row.exp+".json")
		err := run(context.Background(), []string{"simulate", "--config", row.config, "--inference-perf-compat", "e8e0aa99",
			"--sim-hardware", "h100", "--sim-model", row.model, "--tensor-parallel-size", strconv.Itoa(row.tp),
			"--max-num-seqs", "128", "--max-num-batched-tokens", "2048", "--max-model-len", "4096", "--gpu-memory-utilization", "0.9",
			"--percentile-metrics", "ttft,tpot,e2el", "--save-result", "--result-filename", out,
			"--inference-perf-report", filepath.Join(dir, row.exp+"-reports")}, io.Discard, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", row.exp, err)
		}
		r := resultJSON(t, out)
		ttft, e2e, tpot := r["mean_ttft_ms"].(float64), r["mean_e2el_ms"].(float64), r["mean_tpot_ms"].(float64)
		t.Logf("%s %s TP %d: TTFT %.1f (%+.1f%%), E2E %.0f (%+.1f%%), TPOT %.2f (%+.1f%%)", row.exp, row.model, row.tp,
			ttft, 100*(ttft/row.ttft-1), e2e, 100*(e2e/row.e2e-1), tpot, 100*(tpot/row.tpot-1))
		ttftBound := 0.2
		if row.exp == "exp9" {
			// 20 requests/s of 5 s answers keep about 100 sequences in
			// flight, near --max-num-seqs 128: the replay's decode, 11 %
			// slow, holds about 113, and requests queue for a batch slot,
			// so its TTFT comes out 45 % high (docs/simulator.md).
			ttftBound = 0.5
		}
		if !near(e2e, row.e2e, 0.12) || !near(tpot, row.tpot, 0.12) || !near(ttft, row.ttft, ttftBound) {
			t.Errorf("%s: TTFT %.1f, E2E %.0f, TPOT %.2f; measured %.1f, %.0f, %.2f", row.exp, ttft, e2e, tpot, row.ttft, row.e2e, row.tpot)
		}
	}
}

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }
