package tensor

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestKernelsGenerated regenerates the assembly and its Go declarations
// and compares them with the committed files: an edit to one without the
// other fails here.
func TestKernelsGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the generator")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	if msg, err := exec.Command(gobin, "run", "./kernelgen", dir).CombinedOutput(); err != nil {
		t.Fatalf("go run ./kernelgen: %v\n%s", err, msg)
	}
	for _, file := range []string{"kernels_amd64.s", "asm_amd64.go", "kernels_arm64.s", "x8_arm64.s", "asm_arm64.go"} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what kernelgen writes: run go generate ./internal/tensor", file)
		}
	}
}
