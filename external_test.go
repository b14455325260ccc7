package glassbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// TestExternalModule builds and runs testdata/external as a module of its
// own that requires glassbox (replaced by this checkout): the public
// package alone must serve a program outside the module. The program
// checks the golden story, batched against one-by-one results, and that
// cancelling frees the KV cache (see its doc comment).
func TestExternalModule(t *testing.T) {
	model := reftest.Path(t, "models", "stories260K", "stories260K.gguf")
	goTool := reftest.Tool(t, "go")
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/external\n\ngo 1.26\n\n" +
		"require github.com/glassbox-llm/glassbox v0.0.0\n\n" +
		"replace github.com/glassbox-llm/glassbox => " + root + "\n"
	sum, err := os.ReadFile("go.sum") // the checksums of every dependency
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile(filepath.Join("testdata", "external", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": main} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), goTool, "run", ".", model)
	cmd.Dir = dir
	// Everything comes from the module cache: no network, no workspace.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	t.Logf("go run:\n%s", out)
	if err != nil {
		t.Fatalf("the external program failed: %v", err)
	}
	for _, want := range []string{"ok: golden story", "ok: 32 batched equal one by one", "ok: cancel frees the KV cache"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
