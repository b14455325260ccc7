package main

import (
	"bytes"
	"context"
	"io"
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
