package layering

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// gpuPackages are what only a GPU build links: NVIDIA's bindings, the
// executor (which embeds the kernels' PTX), and the library that loads
// shared objects without cgo.
var gpuPackages = []string{module + "/internal/cuda", module + "/internal/executor/cuda", "github.com/ebitengine/purego"}

// deps lists the packages the binary and the public package link for a
// linux/amd64 build with tags, each with the files it embeds.
func deps(t *testing.T, tags string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", tags, "-f", `{{.ImportPath}} {{join .EmbedFiles ","}}`, "./cmd/glassbox", ".")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -tags %q: %v", tags, err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, embeds, _ := strings.Cut(line, " ")
		m[path] = nil
		if embeds != "" {
			m[path] = strings.Split(embeds, ",")
		}
	}
	return m
}

// embedsPTX names the packages that embed a .ptx file.
func embedsPTX(m map[string][]string) []string {
	var out []string
	for p, files := range m {
		if slices.ContainsFunc(files, func(f string) bool { return strings.HasSuffix(f, ".ptx") }) {
			out = append(out, p)
		}
	}
	return out
}

// TestNocudaBuildIsGPULess: `go build -tags nocuda` (the static, CPU-only
// binary README and docs/gpu.md promise) links no GPU package and embeds
// no PTX; the default build links them all (so that the names checked
// here are still the GPU's).
func TestNocudaBuildIsGPULess(t *testing.T) {
	gpu := deps(t, "")
	for _, p := range gpuPackages {
		if _, ok := gpu[p]; !ok {
			t.Errorf("the default build does not link %s: this test's list of GPU packages is stale", p)
		}
	}
	if len(embedsPTX(gpu)) == 0 {
		t.Error("the default build embeds no PTX: this test no longer finds the kernels")
	}
	cpu := deps(t, "nocuda")
	for _, p := range gpuPackages {
		if _, ok := cpu[p]; ok {
			t.Errorf("the nocuda build links %s", p)
		}
	}
	if pkgs := embedsPTX(cpu); len(pkgs) > 0 {
		t.Errorf("the nocuda build embeds PTX (in %s)", strings.Join(pkgs, ", "))
	}
}

// TestFakeGPUStaysInTests: internal/fakecuda, a board made of Go, is for
// tests only: no package's build reaches it.
func TestFakeGPUStaysInTests(t *testing.T) {
	const fake = module + "/internal/fakecuda"
	for _, p := range listPackages(t) {
		if slices.Contains(p.Deps, fake) {
			t.Errorf("%s depends on %s, which is for tests only", p.ImportPath, fake)
		}
	}
}
