package dashboards

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommittedFilesMatchGenerator fails when monitoring/ drifts from what
// the generator writes with the default configuration.
func TestCommittedFilesMatchGenerator(t *testing.T) {
	files, err := Files(Default())
	if err != nil {
		t.Fatal(err)
	}
	matchCommitted(t, "monitoring", files, "go run ./cmd/glassbox monitoring export monitoring")
}

// TestChartFilesMatchGenerator does the same for the rules and dashboards
// the Helm chart embeds.
func TestChartFilesMatchGenerator(t *testing.T) {
	files, err := ChartFiles(Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(DashboardPaths())+1 {
		t.Errorf("the chart embeds %d generated files, want the dashboards and the rules", len(files))
	}
	matchCommitted(t, "deploy/helm/glassbox", files, "go run ./cmd/glassbox monitoring export --chart deploy/helm/glassbox")
}

// matchCommitted compares the committed copy under dir (relative to the
// module root) with files, and reports generated-looking files (.json,
// .yml) there that the generator no longer writes; chart templates
// (templates/, .yaml) are not generated.
func matchCommitted(t *testing.T, dir string, files []File, regenerate string) {
	t.Helper()
	root := filepath.Join("..", "..", filepath.FromSlash(dir))
	want := map[string]bool{}
	for _, f := range files {
		want[f.Path] = true
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Errorf("%s/%s: %v; regenerate with: %s", dir, f.Path, err, regenerate)
			continue
		}
		if !bytes.Equal(got, f.Data) {
			t.Errorf("%s/%s differs from the generator; regenerate with: %s", dir, f.Path, regenerate)
		}
	}
	// A file the generator no longer writes is stale.
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if dir != "monitoring" && !strings.HasPrefix(rel, ChartDir+"/") {
			return nil
		}
		if ext := filepath.Ext(p); (ext == ".json" || ext == ".yml") && !want[rel] {
			t.Errorf("%s/%s is not generated any more: delete it, then run %s", dir, rel, regenerate)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestExportWritesEveryFile(t *testing.T) {
	dir := t.TempDir()
	files, err := Export(dir, Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 7 {
		t.Errorf("exported %d files, want 7", len(files))
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(dir, f.Path))
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("%s: not written as generated (err %v)", f.Path, err)
		}
	}
	bad := Default()
	bad.Job = ""
	if _, err := Export(t.TempDir(), bad); err == nil {
		t.Error("Export accepted an invalid config")
	}
}
