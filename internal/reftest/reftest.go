// Package reftest locates what tests compare glassbox against and run it
// with: the reference data in ../shared beside the module root (real vLLM
// scrapes, llama.cpp's recorded logits, tokenizer vectors, the stories260K
// model) and the real programs users have (Prometheus, promtool,
// Alertmanager, Chromium). Only tests import it.
//
// Where one is missing, the test is skipped, saying loudly what and why;
// under CI=true, where .ci/run provides all of them, it fails instead, so a
// reference test can never pass by not running. Long integration runs are
// skipped unless GLASSBOX_LONG_TESTS=1 (Long).
package reftest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Path is the path of parts under ../shared, which must exist.
func Path(t testing.TB, parts ...string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		missing(t, err.Error())
	}
	p := filepath.Join(append([]string{filepath.Dir(root), "shared"}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		missing(t, err.Error())
	}
	return p
}

func missing(t testing.TB, why string) {
	t.Helper()
	if ci() {
		t.Fatalf("reference data missing under CI=true (../shared must be beside the checkout): %s", why)
	}
	t.Skipf("SKIPPED: this test compares against reference data in ../shared, which this checkout lacks (%s); "+
		"clone the shared folder beside the module to run it (CI=true makes this a failure)", why)
}

// Tool is the path of a program the test runs (promtool, chromium, …),
// found on PATH or as an absolute path.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if ci() {
			t.Fatalf("%s is not installed, and CI=true requires it (.ci/run installs it): %v", name, err)
		}
		t.Skipf("SKIPPED: this test runs %s, which is not installed (%v); .ci/run shows how to install it", name, err)
	}
	return p
}

// NodePackages is the module's directory rel (e.g. testdata/clients),
// whose npm packages must be installed (node_modules, from its
// package-lock.json: npm ci there, as .ci/run does), with node on PATH.
func NodePackages(t testing.TB, rel string) string {
	t.Helper()
	Tool(t, "node")
	root, err := moduleRoot()
	if err != nil {
		missing(t, err.Error())
	}
	dir := filepath.Join(root, rel)
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		if ci() {
			t.Fatalf("%s has no node_modules under CI=true (.ci/run runs npm ci there): %v", rel, err)
		}
		t.Skipf("SKIPPED: this test runs npm clients from %s, whose packages are not installed (%v); run `npm ci` there (.ci/run does)", rel, err)
	}
	return dir
}

// Long marks a long integration run (a real Prometheus, chaos, the
// doctor's corpus regenerated, a full-length calibration, minutes of
// simulated load): the README's `go test -race ./...` skips it, saying
// what it skipped, and GLASSBOX_LONG_TESTS=1 runs it, as .ci/run does in a
// step of its own (which finds these tests by this call).
func Long(t testing.TB, what string) {
	t.Helper()
	if !LongTests() {
		t.Skipf("SKIPPED: a long integration run (%s); GLASSBOX_LONG_TESTS=1 runs it, as .ci/run does", what)
	}
}

// LongTests reports whether GLASSBOX_LONG_TESTS=1 asks for the long runs:
// for a test whose quick form the README's command runs and whose whole
// form is long.
func LongTests() bool { return os.Getenv("GLASSBOX_LONG_TESTS") == "1" }

// ci, LongTests and NoGPU are the environment reads of the tree outside
// cmd/: CI=true says that everything a test needs must be there.
func ci() bool { return os.Getenv("CI") == "true" }

// moduleRoot walks up from the working directory (a test's is its
// package directory) to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

// NoGPU ends a test that needs an NVIDIA GPU it could not open (why is
// the error from opening it): skipped, saying why, or failed under
// GLASSBOX_REQUIRE_GPU=1, which scripts/gpu-check.sh sets where a GPU must
// be. CI has no GPU, so there every GPU test reports its skip.
func NoGPU(t testing.TB, why error) {
	t.Helper()
	if os.Getenv("GLASSBOX_REQUIRE_GPU") == "1" {
		t.Fatalf("no GPU under GLASSBOX_REQUIRE_GPU=1: %v", why)
	}
	t.Skipf("SKIPPED: this test needs an NVIDIA GPU with its driver, and this machine has none usable (%v); scripts/gpu-check.sh runs it where one is (GLASSBOX_REQUIRE_GPU=1 makes this a failure)", why)
}
