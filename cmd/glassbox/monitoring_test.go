package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/dashboards"
)

func TestMonitoringExportCommand(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	// Flags before and after the directory both apply.
	err := run(context.Background(), []string{"monitoring", "export", "--target", "10.0.0.5:9100", dir, "--kv-cache-usage", "0.8"}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	files, err := dashboards.Files(dashboards.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f.Path)); err != nil {
			t.Errorf("%s not written: %v", f.Path, err)
		}
		if !strings.Contains(out.String(), "wrote "+f.Path) {
			t.Errorf("output does not mention %s:\n%s", f.Path, out.String())
		}
	}
	rules, _ := os.ReadFile(filepath.Join(dir, dashboards.RulesPath))
	prom, _ := os.ReadFile(filepath.Join(dir, dashboards.PrometheusPath))
	if !strings.Contains(string(rules), "> 0.8") || !strings.Contains(string(prom), "10.0.0.5:9100") {
		t.Errorf("flags not applied: KV threshold in rules %v, target in scrape config %v",
			strings.Contains(string(rules), "> 0.8"), strings.Contains(string(prom), "10.0.0.5:9100"))
	}

	for _, args := range [][]string{
		{"monitoring"},
		{"monitoring", "import", dir},
		{"monitoring", "export"},
		{"monitoring", "export", dir, "other"},
		{"monitoring", "export", "--kv-cache-usage", "1.5", dir},
		{"monitoring", "export", "--ttft-slo-seconds", "0.3", dir},
	} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestMonitoringExportChartAndFleet: --chart writes only the chart's
// embedded files, as the generator makes them; --fleet switches the scrape
// config to file_sd and writes the targets files.
func TestMonitoringExportChartAndFleet(t *testing.T) {
	dir := t.TempDir()
	if err := run(context.Background(), []string{"monitoring", "export", "--chart", dir}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	want, err := dashboards.ChartFiles(dashboards.Default())
	if err != nil {
		t.Fatal(err)
	}
	var wrote []string
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			wrote = append(wrote, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range want {
		paths = append(paths, f.Path)
		if got, _ := os.ReadFile(filepath.Join(dir, f.Path)); string(got) != string(f.Data) {
			t.Errorf("%s is not what the generator makes", f.Path)
		}
	}
	slices.Sort(paths)
	if diff := cmp.Diff(paths, wrote); diff != "" {
		t.Errorf("--chart wrote (-want +got):\n%s", diff)
	}

	dir = t.TempDir()
	err = run(context.Background(), []string{"monitoring", "export", "--fleet", "127.0.0.1:8001=127.0.0.1:9400, 127.0.0.1:8011", dir}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	prom, _ := os.ReadFile(filepath.Join(dir, dashboards.PrometheusPath))
	engines, _ := os.ReadFile(filepath.Join(dir, dashboards.FleetTargetsPath))
	dcgm, _ := os.ReadFile(filepath.Join(dir, dashboards.FleetDCGMPath))
	for what, ok := range map[string]bool{
		"file_sd in prometheus.yml":      strings.Contains(string(prom), "file_sd_configs"),
		"both engines in the targets":    strings.Contains(string(engines), `"127.0.0.1:8001"`) && strings.Contains(string(engines), `"127.0.0.1:8011"`),
		"the exporter with its instance": strings.Contains(string(dcgm), `"instance": "127.0.0.1:8001"`),
	} {
		if !ok {
			t.Errorf("--fleet: no %s:\n%s\n%s\n%s", what, prom, engines, dcgm)
		}
	}
}
