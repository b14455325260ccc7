package bench

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func f64(v float64) *float64 { return &v }

func TestParseGoodput(t *testing.T) {
	tests := []struct {
		in      string
		want    SLOs
		wantErr bool
	}{
		{"ttft:200 tpot:50", SLOs{TTFT: f64(200), TPOT: f64(50)}, false},
		{"e2el:2000,ttft:0.5", SLOs{TTFT: f64(0.5), E2EL: f64(2000)}, false},
		{"", SLOs{}, false},
		{"ttft", SLOs{}, true},
		{"itl:5", SLOs{}, true},
		{"ttft:-1", SLOs{}, true},
		{"ttft:abc", SLOs{}, true},
		{"ttft:NaN", SLOs{}, true},
	}
	for _, tt := range tests {
		got, err := ParseGoodput(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseGoodput(%q) error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseGoodput(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func FuzzParseGoodput(f *testing.F) {
	for _, s := range []string{"ttft:200 tpot:50 e2el:1000", "ttft:", ":5", "tpot:1e308,ttft:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		slo, err := ParseGoodput(s)
		if err != nil {
			return
		}
		for _, v := range []*float64{slo.TTFT, slo.TPOT, slo.E2EL} {
			if v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
				t.Fatalf("ParseGoodput(%q) accepted %v", s, *v)
			}
		}
	})
}
