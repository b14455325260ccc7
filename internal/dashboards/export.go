package dashboards

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// File is one generated file, its path relative to the export directory.
type File struct {
	Path string
	Data []byte
}

// Paths of the generated files under the export directory. The rules and
// test paths are relative to the files that name them.
const (
	OverviewPath     = "dashboards/glassbox-overview.json"
	DiagnosisPath    = "dashboards/glassbox-diagnosis.json"
	RulesPath        = "prometheus/rules.yml"
	PrometheusPath   = "prometheus/prometheus.yml"
	AlertmanagerPath = "alertmanager/alertmanager.yml"
	RuleTestsPath    = "tests/rules_test.yml"
)

// Files generates every file of the monitoring directory from c.
func Files(c Config) ([]File, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("generate monitoring files: %w", err)
	}
	var out []File
	for _, d := range []struct {
		path  string
		build func(Config) (dashboard.Dashboard, error)
	}{{OverviewPath, Overview}, {DiagnosisPath, Diagnosis}} {
		db, err := d.build(c)
		if err != nil {
			return nil, fmt.Errorf("build dashboard %s: %w", d.path, err)
		}
		js, err := json.MarshalIndent(db, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode dashboard %s: %w", d.path, err)
		}
		out = append(out, File{d.path, append(js, '\n')})
	}
	for _, g := range []struct {
		path string
		gen  func() ([]byte, error)
	}{
		{RulesPath, func() ([]byte, error) { return RulesYAML(c) }},
		{PrometheusPath, func() ([]byte, error) { return PrometheusYAML(c, "rules.yml") }},
		{AlertmanagerPath, func() ([]byte, error) { return AlertmanagerYAML(c) }},
		{RuleTestsPath, func() ([]byte, error) { return RuleTestsYAML(c, "../"+RulesPath) }},
	} {
		data, err := g.gen()
		if err != nil {
			return nil, fmt.Errorf("generate %s: %w", g.path, err)
		}
		out = append(out, File{g.path, data})
	}
	return out, nil
}

// Export writes the files of c under dir, creating directories as needed
// and replacing files of the same name.
func Export(dir string, c Config) ([]File, error) {
	files, err := Files(c)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("export monitoring files: %w", err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return nil, fmt.Errorf("export monitoring files: %w", err)
		}
	}
	return files, nil
}
