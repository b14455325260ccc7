package metricspec

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Expected strings are what CPython's prometheus_client floatToGoString
// returns (repr, then Go-style exponents past six integer digits).
func TestPyFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{1, "1.0"},
		{-1, "-1.0"},
		{0.001, "0.001"},
		{0.0001, "0.0001"},
		{0.00015, "0.00015"},
		{0.00001, "1e-05"},
		{0.30000000000000004, "0.30000000000000004"}, // float64(0.1)+float64(0.2)
		{2.5, "2.5"},
		{2560, "2560.0"},
		{999999, "999999.0"},
		{1e6, "1e+06"},
		{2e6, "2e+06"},
		{1048576, "1.048576e+06"},
		{1234567.5, "1.2345675e+06"},
		{1e10, "1e+010"}, // prometheus_client's own quirk, kept for byte compatibility
		{1e15, "1e+015"},
		{1e16, "1e+16"},
		{1.5e300, "1.5e+300"},
		{-2e6, "-2000000.0"}, // negative numbers keep repr
		{5e-324, "5e-324"},
		{math.Inf(1), "+Inf"},
		{math.Inf(-1), "-Inf"},
		{math.NaN(), "NaN"},
	}
	for _, tt := range tests {
		if got := PyFloat(tt.in); got != tt.want {
			t.Errorf("PyFloat(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

var pyFloatShape = regexp.MustCompile(`^(NaN|[+-]Inf|-?\d+\.\d+|-?\d(\.\d+)?e[+-]\d{2,3}|\d(\.\d+)?e\+0\d+)$`)

// FuzzPyFloat checks that every formatted number parses back to itself
// and has one of Python's shapes.
func FuzzPyFloat(f *testing.F) {
	for _, v := range []float64{0, 1, 0.001, 1e-5, 2560, 1e6, 1048576, 1e10, 1e16, -3.5, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		s := PyFloat(v)
		if !pyFloatShape.MatchString(s) {
			t.Errorf("PyFloat(%v) = %q: not a Python float shape", v, s)
		}
		back, err := strconv.ParseFloat(strings.Replace(s, "Inf", "inf", 1), 64)
		if err != nil {
			t.Fatalf("PyFloat(%v) = %q does not parse: %v", v, s, err)
		}
		if back != v && !(math.IsNaN(back) && math.IsNaN(v)) {
			t.Errorf("PyFloat(%v) = %q parses back as %v", v, s, back)
		}
	})
}

// TestWriteText pins the exact bytes of each metric type.
func TestOneTwoFiveBuckets(t *testing.T) {
	tests := []struct {
		max  int
		want []float64
	}{
		{1, []float64{1}},
		{4, []float64{1, 2}},
		{5, []float64{1, 2, 5}},
		{19, []float64{1, 2, 5, 10}},
		{4096, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000}},
		{8192, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}},
		{32768, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000}},
		{131072, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, OneTwoFiveBuckets(tt.max)); diff != "" {
			t.Errorf("OneTwoFiveBuckets(%d) (-want +got):\n%s", tt.max, diff)
		}
	}
}

func TestPythonBool(t *testing.T) {
	if PythonBool(true) != "True" || PythonBool(false) != "False" {
		t.Errorf("PythonBool: %q, %q", PythonBool(true), PythonBool(false))
	}
}

func TestPyRepr(t *testing.T) {
	for v, want := range map[float64]string{0.9: "0.9", 0.93: "0.93", 1.7777777777777777: "1.7777777777777777", 16: "16.0", 1e16: "1e+16"} {
		if got := PyRepr(v); got != want {
			t.Errorf("PyRepr(%v) = %q, want %q", v, got, want)
		}
	}
}
