package dashboards

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

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
	FleetPath        = "dashboards/glassbox-fleet.json"
	RulesPath        = "prometheus/rules.yml"
	PrometheusPath   = "prometheus/prometheus.yml"
	AlertmanagerPath = "alertmanager/alertmanager.yml"
	RuleTestsPath    = "tests/rules_test.yml"
	// With Config.Fleet: the file_sd targets files prometheus.yml reads.
	FleetTargetsPath = "prometheus/" + fleetTargetsFile
	FleetDCGMPath    = "prometheus/" + fleetDCGMFile
)

// DashboardPaths lists the generated Grafana dashboards.
func DashboardPaths() []string { return []string{OverviewPath, DiagnosisPath, FleetPath} }

// Files generates every file of the monitoring directory from c.
func Files(c Config) ([]File, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("generate monitoring files: %w", err)
	}
	var out []File
	for _, d := range []struct {
		path  string
		build func(Config) (dashboard.Dashboard, error)
	}{{OverviewPath, Overview}, {DiagnosisPath, Diagnosis}, {FleetPath, Fleet}} {
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
	if len(c.Fleet) > 0 {
		engines, dcgm, err := FleetTargetsJSON(c)
		if err != nil {
			return nil, err
		}
		out = append(out, File{FleetTargetsPath, engines})
		if dcgm != nil {
			out = append(out, File{FleetDCGMPath, dcgm})
		}
	}
	return out, nil
}

// ChartDir is where the Helm chart's generated files live, relative to the
// chart: its templates read them with .Files.Get.
const ChartDir = "files"

// ChartFiles generates the files the Helm chart (deploy/helm/glassbox)
// embeds: the same rules and dashboards as Files, under files/ with the
// monitoring directory's layout (files/prometheus/rules.yml,
// files/dashboards/*.json). The chart's PrometheusRule carries those rules
// and its ConfigMaps those dashboards, so the chart and monitoring/ cannot
// drift apart.
func ChartFiles(c Config) ([]File, error) {
	files, err := Files(c)
	if err != nil {
		return nil, err
	}
	var out []File
	for _, f := range files {
		if f.Path == RulesPath || strings.HasPrefix(f.Path, "dashboards/") {
			out = append(out, File{path.Join(ChartDir, f.Path), f.Data})
		}
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
	return files, Write(dir, files)
}

// Write writes files under dir, creating directories as needed and
// replacing files of the same name.
func Write(dir string, files []File) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("export monitoring files: %w", err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return fmt.Errorf("export monitoring files: %w", err)
		}
	}
	return nil
}
