package tensor

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestKernelsGenerated regenerates the assembly and compares it with the
// committed kernels_amd64.s: an edit to one without the other fails here.
func TestKernelsGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the generator")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out := filepath.Join(t.TempDir(), "kernels_amd64.s")
	if msg, err := exec.Command(gobin, "run", "gen_kernels.go", out).CombinedOutput(); err != nil {
		t.Fatalf("go run gen_kernels.go: %v\n%s", err, msg)
	}
	got, _ := os.ReadFile(out)
	want, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("kernels_amd64.s is not what gen_kernels.go writes: run go generate ./internal/tensor")
	}
}
