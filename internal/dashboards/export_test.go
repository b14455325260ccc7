package dashboards

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// regenerate is what a developer runs after changing the generator.
const regenerate = "go run ./cmd/glassbox monitoring export monitoring"

// TestCommittedFilesMatchGenerator fails when monitoring/ drifts from what
// the generator writes with the default configuration.
func TestCommittedFilesMatchGenerator(t *testing.T) {
	root := filepath.Join("..", "..", "monitoring")
	files, err := Files(Default())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range files {
		want[f.Path] = true
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Errorf("monitoring/%s: %v; regenerate with: %s", f.Path, err, regenerate)
			continue
		}
		if !bytes.Equal(got, f.Data) {
			t.Errorf("monitoring/%s differs from the generator; regenerate with: %s", f.Path, regenerate)
		}
	}
	// A file the generator no longer writes is stale.
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if ext := filepath.Ext(p); (ext == ".json" || ext == ".yml") && !want[filepath.ToSlash(rel)] {
			t.Errorf("monitoring/%s is not generated any more: delete it, then run %s", filepath.ToSlash(rel), regenerate)
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
	if len(files) != 6 {
		t.Errorf("exported %d files, want 6", len(files))
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
