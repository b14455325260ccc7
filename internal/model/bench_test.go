package model

import (
	"bytes"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// TestBenchReportsDecodeBandwidth: a tg test reports what a step reads,
// the file's matrices (the embedding table only when it is also the
// output head) plus the context's K/V, and the rate that makes.
func TestBenchReportsDecodeBandwidth(t *testing.T) {
	shape, _ := LookupShape("tiny")
	var buf bytes.Buffer
	if err := WriteRandom(&buf, RandomSpec{Shape: shape, Type: gguf.Q8_0, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	w, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	var matrices int64
	hasOutput := false
	for _, ti := range f.Tensors {
		hasOutput = hasOutput || ti.Name == "output.weight"
	}
	for _, ti := range f.Tensors {
		if len(ti.Dims) == 2 && (ti.Name != "token_embd.weight" || !hasOutput) && !strings.Contains(ti.Name, "norm") {
			matrices += ti.Size
		}
	}
	if got := w.StreamedBytes(); got != matrices {
		t.Fatalf("StreamedBytes %d, the file's matrices %d", got, matrices)
	}
	res, err := Bench(w, BenchConfig{Gen: 8, Depth: 32, Reps: 1, Threads: 2, ReadCeiling: true})
	if err != nil {
		t.Fatal(err)
	}
	tg := res[0]
	want := matrices + (32+4)*w.KVBytesPerToken()
	if tg.Test != "tg8 @ d32" || tg.BytesPerToken != want {
		t.Fatalf("%s reads %d bytes per token, want tg8 @ d32 reading %d", tg.Test, tg.BytesPerToken, want)
	}
	if gbps := tg.Median * float64(want) / 1e9; tg.GBps != gbps {
		t.Errorf("%.3f GB/s reported, %.3f from the median", tg.GBps, gbps)
	}
	var byType int64
	for _, n := range tg.WeightBytesByType {
		byType += n
	}
	if byType != matrices || tg.WeightBytesByType["Q8_0"] == 0 {
		t.Errorf("weight bytes by type %v, want the file's %d bytes of matrices", tg.WeightBytesByType, matrices)
	}
	// The ceiling is measured on both sides of the test, and the share is
	// against the higher.
	if !(tg.ReadBeforeGBps > 0 && tg.ReadAfterGBps > 0) || tg.ReadCeilingGBps != max(tg.ReadBeforeGBps, tg.ReadAfterGBps) ||
		tg.CeilingShare != tg.GBps/tg.ReadCeilingGBps {
		t.Errorf("read ceiling %+v", tg)
	}
}
