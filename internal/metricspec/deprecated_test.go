package metricspec

import (
	"slices"
	"testing"
)

func TestHiddenFor(t *testing.T) {
	names := func(ds []Deprecated) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Name)
		}
		return out
	}
	all := []string{GPUCacheUsagePerc, GPUPrefixCacheQueries, GPUPrefixCacheHits, TimePerOutputTokenSeconds}
	for _, tt := range []struct {
		v    string
		want []string
	}{
		{"0.9.2", all}, {"0.10", all}, {"v0.10.1", all},
		{"0.11", []string{TimePerOutputTokenSeconds}}, // the gpu_* names were hidden in 0.11
		{"0.12", nil}, {"0.29", nil},
	} {
		got, err := HiddenFor(tt.v)
		if err != nil || !slices.Equal(names(got), tt.want) {
			t.Errorf("HiddenFor(%q) = %v, %v; want %v", tt.v, names(got), err, tt.want)
		}
	}
	for _, bad := range []string{"", "1.0", "0", "0.x", "latest", "0.1.2.3"} {
		if _, err := HiddenFor(bad); err == nil {
			t.Errorf("HiddenFor(%q) accepted", bad)
		}
	}
	for _, d := range DeprecatedFamilies() {
		if Index(d.Of) < 0 {
			t.Errorf("%s carries %s, which is not a family", d.Name, d.Of)
		}
	}
}
