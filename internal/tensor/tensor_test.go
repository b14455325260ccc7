package tensor

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

func referenceDir(t testing.TB) string { t.Helper(); return reftest.Path(t, "testdata", "reference") }

type dequantCheck struct {
	Type     string    `json:"type"`
	Ne       []int     `json:"ne"`
	Sum      float64   `json:"sum"`
	SumSq    float64   `json:"sumsq"`
	Row0     []float64 `json:"row0_first16"`
	LastRow4 []float64 `json:"last_row_last4"`
}

// TestDequantizeMatchesGGML checks every tensor of every reference model
// against the sums and values gguf-py's dequantisers (bit-identical to
// ggml's) recorded.
func TestDequantizeMatchesGGML(t *testing.T) {
	dir := referenceDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "tiny-*.gguf"))
	if len(files) == 0 {
		t.Fatal("no reference models")
	}
	for _, path := range files {
		raw, err := os.ReadFile(path[:len(path)-len(".gguf")] + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var ref struct {
			Checks map[string]dequantCheck `json:"dequant_checks"`
		}
		if err := json.Unmarshal(raw, &ref); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range ref.Checks {
			ti, ok := f.Tensor(name)
			if !ok {
				t.Fatalf("%s: no tensor %s", path, name)
			}
			vals := make([]float32, ti.Elements())
			if err := Dequantize(ti.Type, f.TensorData(ti), vals); err != nil {
				t.Fatal(err)
			}
			var sum, sumsq float64
			for _, v := range vals {
				sum += float64(v)
				sumsq += float64(v) * float64(v)
			}
			base := filepath.Base(path) + " " + name
			if !close(sum, want.Sum, 1e-5) || !close(sumsq, want.SumSq, 1e-5) {
				t.Errorf("%s: sum %v sumsq %v, want %v %v", base, sum, sumsq, want.Sum, want.SumSq)
			}
			for i, w := range want.Row0 {
				if !ulpClose(vals[i], w) {
					t.Errorf("%s: row 0 [%d] = %v, want %v", base, i, vals[i], w)
				}
			}
			for i, w := range want.LastRow4 {
				if v := vals[len(vals)-4+i]; !ulpClose(v, w) {
					t.Errorf("%s: last row [-%d] = %v, want %v", base, 4-i, v, w)
				}
			}
		}
		f.Close()
	}
}

func close(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(1, math.Abs(b)) }

// ulpClose allows one float32 ulp (the reference prints 9 significant digits).
func ulpClose(v float32, w float64) bool {
	want := float32(w)
	return v == want || math.Nextafter32(want, float32(math.Inf(1))) == v || math.Nextafter32(want, float32(math.Inf(-1))) == v
}

func TestHalfConversions(t *testing.T) {
	for _, c := range []struct {
		f float32
		h uint16
	}{{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {6.103515625e-05, 0x0400}, {5.960464477539063e-08, 0x0001}, {float32(math.Inf(1)), 0x7c00}} {
		if got := F32ToF16(c.f); got != c.h {
			t.Errorf("F32ToF16(%v) = %#x, want %#x", c.f, got, c.h)
		}
		if got := F16ToF32(c.h); got != c.f {
			t.Errorf("F16ToF32(%#x) = %v, want %v", c.h, got, c.f)
		}
	}
	// Ties go to even: 1 + 2^-11 is halfway between 1 and 1+2^-10.
	if got := F32ToF16(1 + 1.0/2048); got != 0x3c00 {
		t.Errorf("tie rounding: %#x", got)
	}
	// Every half round-trips.
	for h := range uint32(0x7c00) {
		if got := F32ToF16(F16ToF32(uint16(h))); got != uint16(h) {
			t.Fatalf("round trip %#x -> %#x", h, got)
		}
	}
	if BF16ToF32(F32ToBF16(1.5)) != 1.5 {
		t.Error("bf16 1.5")
	}
}

// TestMulBatchAgainstDequantized checks the quantised matmul paths against
// a float64 product of the dequantised weights, within the error that
// activation quantisation explains.
func TestMulBatchAgainstDequantized(t *testing.T) {
	dir := referenceDir(t)
	for _, typ := range []string{"F32", "F16", "Q8_0", "Q4_0", "Q5_0", "Q4_K", "Q5_K", "Q6_K"} {
		f, err := gguf.Open(filepath.Join(dir, "tiny-llama."+typ+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		ti, _ := f.Tensor("blk.0.ffn_down.weight")
		m, err := NewMatrix(ti.Type, int(ti.Dims[1]), int(ti.Dims[0]), f.TensorData(ti))
		if err != nil {
			t.Fatal(err)
		}
		const n = 3
		x := make([]float32, n*m.Cols)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)*0.37)) * 0.5
		}
		out := make([]float32, n*m.Rows)
		var s Scratch
		p := NewPool(2)
		m.MulBatch(x, n, out, p, &s)
		p.Close()
		row := make([]float32, m.Cols)
		var worst float64
		for r := range m.Rows {
			m.Row(r, row)
			for tok := range n {
				var want float64
				for c := range m.Cols {
					want += float64(row[c]) * float64(x[tok*m.Cols+c])
				}
				worst = math.Max(worst, math.Abs(want-float64(out[tok*m.Rows+r])))
			}
		}
		// Weights are ~0.02, inputs up to 0.5 over 512 columns: a dot
		// of ~0.2; Q8 activation rounding costs about 1% of that.
		tol := map[string]float64{"F32": 1e-5, "F16": 1e-3}[typ]
		if tol == 0 {
			tol = 5e-3
		}
		if worst > tol {
			t.Errorf("%s: max error %g against the dequantised product, want <= %g", typ, worst, tol)
		}
		f.Close()
	}
}

// TestQuantizeRoundTrip: every writable type dequantises back to its input
// within the format's step size (a whole step at the clamped positive edge
// of Q4_0/Q5_0, whose grid is asymmetric).
func TestQuantizeRoundTrip(t *testing.T) {
	x := make([]float32, 512)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*1.3)) * 0.05
	}
	for typ, tol := range map[gguf.TensorType]float64{gguf.F32: 0, gguf.F16: 3e-5, gguf.BF16: 3e-4, gguf.Q8_0: 2.5e-4, gguf.Q5_0: 3.2e-3, gguf.Q4_0: 6.3e-3,
		// K-quants: one step of a sub-block's grid (range/15, /31; |max|/32).
		gguf.Q4_K: 4e-3, gguf.Q5_K: 2e-3, gguf.Q6_K: 1.7e-3} {
		b, err := Quantize(typ, x, nil)
		if err != nil {
			t.Fatal(err)
		}
		back := make([]float32, len(x))
		if err := Dequantize(typ, b, back); err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i := range x {
			worst = math.Max(worst, math.Abs(float64(x[i]-back[i])))
		}
		t.Logf("%s: round-trip error %.3g", typ, worst)
		if worst > tol {
			t.Errorf("%s: round-trip error %g, want <= %g", typ, worst, tol)
		}
	}
	if _, err := Quantize(gguf.Q2_K, x, nil); err == nil {
		t.Error("Q2_K writing is not implemented and must say so")
	}
}
