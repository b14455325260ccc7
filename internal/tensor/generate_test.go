package tensor

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestKernelsGenerated regenerates the assembly and compares it with the
// committed files: an edit to one without the other fails here.
func TestKernelsGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the generators")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	for gen, file := range map[string]string{"gen_kernels.go": "kernels_amd64.s", "gen_arm64.go": "x8_arm64.s"} {
		out := filepath.Join(t.TempDir(), file)
		if msg, err := exec.Command(gobin, "run", gen, out).CombinedOutput(); err != nil {
			t.Fatalf("go run %s: %v\n%s", gen, err, msg)
		}
		got, _ := os.ReadFile(out)
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what %s writes: run go generate ./internal/tensor", file, gen)
		}
	}
}
