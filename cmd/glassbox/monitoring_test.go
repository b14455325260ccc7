package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
