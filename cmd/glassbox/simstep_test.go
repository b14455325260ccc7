package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

func stepJSON(t *testing.T, args ...string) stepResult {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), append([]string{"simulate", "step", "--json"}, args...), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var r stepResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return r
}

// TestSimulateStep prices steps the measured H200 ran: a steady stream of
// 64 decodes at 2048 tokens reads as the real one did (engine activity
// below 1, power at the limit, clock down), a wider composition costs
// more, and FP8 less.
func TestSimulateStep(t *testing.T) {
	d := stepJSON(t, "--decode", "64x2048")
	// Measured on an H200: 9.3–9.5 ms; GR 0.91–0.96, SM 0.72–0.81, tensor
	// 0.32–0.37, DRAM 0.52–0.66, 693–704 W, 1740–1950 MHz.
	if d.DurationMS < 8.8 || d.DurationMS > 10.2 {
		t.Errorf("64×2048 decode: %.2f ms, measured 9.3–9.5", d.DurationMS)
	}
	c := d.DCGM
	for _, r := range []struct {
		name      string
		v, lo, hi float64
	}{
		{"gr_engine_active", c.GREngineActive, 0.88, 0.96}, {"sm_active", c.SMActive, 0.68, 0.85}, {"tensor_active", c.TensorActive, 0.28, 0.42},
		{"dram_active", c.DRAMActive, 0.48, 0.7}, {"power_w", c.PowerW, 680, 700}, {"sm_clock_mhz", c.SMClockMHz, 1650, 1980}, {"gpu_util", c.GPUUtil, 100, 100},
	} {
		if r.v < r.lo || r.v > r.hi {
			t.Errorf("64×2048 decode: %s %.3f, want %.2f–%.2f as measured", r.name, r.v, r.lo, r.hi)
		}
	}
	var sum float64
	for _, v := range d.Families {
		sum += v
	}
	if math.Abs(sum-d.DurationMS) > 1e-6*d.DurationMS {
		t.Errorf("families add up to %.4f ms, the step is %.4f", sum, d.DurationMS)
	}
	mixed := stepJSON(t, "--decode", "64x2048", "--prefill", "2048@0")
	if mixed.DurationMS <= d.DurationMS || mixed.DCGM.TensorActive <= d.DCGM.TensorActive {
		t.Errorf("adding a 2048-token chunk: %.2f ms (tensor %.2f), decode alone %.2f (%.2f)", mixed.DurationMS, mixed.DCGM.TensorActive, d.DurationMS, d.DCGM.TensorActive)
	}
	fp8 := stepJSON(t, "--decode", "64x2048", "--sim-dtype", "fp8")
	if fp8.DurationMS >= d.DurationMS || fp8.Weights != "fp8" || fp8.KV != "fp8" {
		t.Errorf("fp8: %.2f ms (%s, %s), bf16 %.2f", fp8.DurationMS, fp8.Weights, fp8.KV, d.DurationMS)
	}
	for _, bad := range [][]string{{}, {"--decode", "64"}, {"--decode", "0x10"}, {"--prefill", "10@-1"}, {"--decode", "1x1", "--sim-dtype", "fp4"},
		{"--decode", "1x1", "--sim-hardware", "a100-80g", "--quantization", "fp8"}, {"--decode", "1x1", "stray"}, {"--decode", "70000x10"}} {
		if err := run(context.Background(), append([]string{"simulate", "step"}, bad...), io.Discard, io.Discard); err == nil {
			t.Errorf("simulate step %v: accepted", bad)
		}
	}
}

// TestCalibrateFromProbe fits the measured H200's files as a user would
// fit their GPU's, and the profile it writes prices steps as the built-in
// H200 (fitted to the same files) does.
func TestCalibrateFromProbe(t *testing.T) {
	dir := reftest.Path(t, "reference", "calibration", "h200")
	profile := filepath.Join(t.TempDir(), "h200.yaml")
	var out bytes.Buffer
	args := []string{"simulate", "calibrate", "--output", profile}
	for _, f := range []string{"h200-fused.json", "h200-eager.json", "h200-gaps.json", "h200-extras.json"} {
		args = append(args, "--from-probe", filepath.Join(dir, f))
	}
	args = append(args, "--from-probe", filepath.Join("..", "..", "internal", "calibrate", "testdata", "h200-probe-2026-12-04.json"))
	if err := run(context.Background(), args, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mean |error|", "GR_ENGINE", "GEMMs alone, fp8", "Profile written to"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	for _, step := range [][]string{{"--decode", "32x8192"}, {"--prefill", "4096@0"}, {"--decode", "8x8192", "--prefill", "4096@0"}} {
		built, fitted := stepJSON(t, step...), stepJSON(t, append(step, "--sim-calibration", profile)...)
		if math.Abs(fitted.DurationMS/built.DurationMS-1) > 0.01 || math.Abs(fitted.DCGM.SMActive-built.DCGM.SMActive) > 0.01 {
			t.Errorf("%v: fitted profile %.3f ms (SM %.3f), built-in %.3f ms (SM %.3f)", step, fitted.DurationMS, fitted.DCGM.SMActive, built.DurationMS, built.DCGM.SMActive)
		}
	}
	if err := run(context.Background(), []string{"simulate", "calibrate", "--from-probe", "/nonexistent.json"}, io.Discard, io.Discard); err == nil {
		t.Error("a missing probe file was accepted")
	}
}
