// Package layering holds the tests that enforce DESIGN.md §2's dependency
// rules across the module, and that keep docs/architecture.md's map of it
// (the files and functions a request passes through) true. It has no code
// of its own.
package layering

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/glassbox-llm/glassbox"

type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string // non-test sources
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// forbidden maps a package prefix to the dependencies it must never reach,
// directly or through others.
var forbidden = map[string][]string{
	module + "/internal/engine":  {"net/http", "github.com/prometheus/", "go.opentelemetry.io/", module + "/internal/server", module + "/internal/metrics", module + "/internal/tracing", module + "/internal/executor"},
	module + "/internal/sched":   {"net/http", "github.com/prometheus/", "go.opentelemetry.io/", module + "/internal/server", module + "/internal/metrics", module + "/internal/tracing", module + "/internal/executor", module + "/internal/engine"},
	module + "/internal/kvcache": {"net/http", "github.com/prometheus/", "go.opentelemetry.io/", module + "/internal/server", module + "/internal/metrics", module + "/internal/tracing", module + "/internal/executor", module + "/internal/engine", module + "/internal/sched"},
	// Constrained decoding is pure: the engine declares what it needs of
	// a matcher, and servers and executors hand matchers around.
	module + "/internal/grammar":  {"net/http", "github.com/prometheus/", "go.opentelemetry.io/", module + "/internal/server", module + "/internal/metrics", module + "/internal/tracing", module + "/internal/executor", module + "/internal/engine", module + "/internal/tokenizer", module + "/internal/model"},
	module + "/internal/toolcall": {"net/http", "github.com/prometheus/", "go.opentelemetry.io/", module + "/internal/server", module + "/internal/metrics", module + "/internal/tracing", module + "/internal/executor", module + "/internal/engine", module + "/internal/grammar"},
	// Speculative decoding's pure parts: the engine and the executors
	// build on them.
	module + "/internal/speculative": {"net/http", "github.com/prometheus/", "go.opentelemetry.io/", module + "/internal/server", module + "/internal/metrics", module + "/internal/tracing", module + "/internal/executor", module + "/internal/engine"},
	module + "/internal/sampling":    {"net/http", "github.com/prometheus/", "go.opentelemetry.io/", module + "/internal/server", module + "/internal/metrics", module + "/internal/tracing", module + "/internal/executor", module + "/internal/engine"},
	module + "/internal/server":      {"go.opentelemetry.io/", module + "/internal/metrics", module + "/internal/tracing", module + "/internal/profiler", module + "/internal/executor"},
	module + "/internal/tracing":     {"github.com/prometheus/", module + "/internal/server", module + "/internal/metrics", module + "/internal/profiler", module + "/internal/executor"},
	module + "/internal/profiler":    {"net/http", "github.com/prometheus/", "go.opentelemetry.io/", module + "/internal/server", module + "/internal/metrics", module + "/internal/tracing", module + "/internal/executor"},
	module + "/internal/bench":       {module + "/internal/engine", module + "/internal/sched", module + "/internal/kvcache", module + "/internal/executor", module + "/internal/inferenceperf"},
	// inference-perf's files (configurations in, plans and reports out)
	// build on workload and bench, and know no server or simulator.
	module + "/internal/inferenceperf": {module + "/internal/engine", module + "/internal/sched", module + "/internal/kvcache", module + "/internal/executor",
		module + "/internal/server", module + "/internal/simulate", module + "/internal/replica"},
	// The doctor's core is pure, like the engine's: a window in, a
	// diagnosis out. Collection (HTTP, Prometheus, files) is
	// internal/source's, and the replays are cmd's.
	module + "/internal/doctor": {"net/http", module + "/internal/source", module + "/internal/promtext", module + "/internal/bench", module + "/internal/metrics",
		module + "/internal/engine", module + "/internal/sched", module + "/internal/kvcache", module + "/internal/executor"},
	module + "/internal/source": {module + "/internal/engine", module + "/internal/sched", module + "/internal/kvcache", module + "/internal/executor"},
	// The corpus is data and checks over the doctor's windows: it
	// generates nothing (cmd's tests run the scenarios through simulate).
	module + "/internal/corpus": {module + "/internal/engine", module + "/internal/sched", module + "/internal/kvcache", module + "/internal/executor", module + "/internal/simulate"},
	module + "/internal/live":   {module + "/internal/engine", module + "/internal/sched", module + "/internal/kvcache", module + "/internal/executor", module + "/internal/server"},
	// The fleet's router and autoscaler are pure policies: simulate shows
	// them the replicas; they never reach the engine or serve anything.
	module + "/internal/router":     {"net/http", "github.com/prometheus/", module + "/internal/engine", module + "/internal/sched", module + "/internal/kvcache", module + "/internal/executor", module + "/internal/replica"},
	module + "/internal/autoscaler": {"net/http", "github.com/prometheus/", module + "/internal/"},
	module + "/internal/workload":   {"net/http", module + "/internal/engine", module + "/internal/sched", module + "/internal/kvcache", module + "/internal/executor", module + "/internal/bench", module + "/internal/simulate", module + "/internal/inferenceperf"},
	// The model side computes; it serves nothing and knows no engine.
	module + "/internal/gguf":      modelSide,
	module + "/internal/tensor":    modelSide,
	module + "/internal/model":     modelSide,
	module + "/internal/tokenizer": modelSide,
	module + "/internal/jinja":     modelSide,
	// The exposition reader knows the format, not what any family means:
	// what a family says is its caller's (cmd reads spec-decode counters).
	module + "/internal/promtext": {module + "/internal/"},
	// NVIDIA's libraries, bound at run time: the GPU executor and the
	// tools that read the board build on them; they know no engine.
	module + "/internal/cuda": modelSide,
	// The fake board the GPU code's tests run on knows only the bindings.
	module + "/internal/fakecuda": slices.Concat(modelSide, []string{module + "/internal/replica", module + "/internal/dcgm"}),
	// dcgm-exporter's series, simulated or read from a real GPU: it
	// declares what it reads of NVML (dcgm.Device) and of an engine step
	// (dcgm.Step), and the wiring adapts internal/cuda and the engine's
	// events to them, so the exporter builds and tests without NVIDIA's
	// libraries or an engine; the simulated counters are the cost model's.
	// It serves text, it registers no metrics.
	module + "/internal/dcgm": {"github.com/prometheus/", "go.opentelemetry.io/", module + "/internal/cuda", module + "/internal/engine", module + "/internal/executor",
		module + "/internal/server", module + "/internal/metrics", module + "/internal/tracing", module + "/internal/replica"},
	// The cost model prices steps from the profiles: it knows no engine
	// (a step comes in as costmodel.Seq), no executor (the simulated one
	// imports it, with the fake model's text kept there) and serves nothing.
	module + "/internal/costmodel": {"net/http", "github.com/prometheus/", "go.opentelemetry.io/", module + "/internal/engine", module + "/internal/sched",
		module + "/internal/kvcache", module + "/internal/executor", module + "/internal/server", module + "/internal/metrics", module + "/internal/tracing",
		module + "/internal/replica", module + "/internal/simulate", module + "/internal/dcgm"},
	// The profile table is data: everything reads it, it reads nothing.
	module + "/internal/profiles": {module + "/internal/", "net/http", "github.com/prometheus/"},
	module + "/internal/hub":      {module + "/internal/engine", module + "/internal/server", module + "/internal/executor", module + "/internal/model"},
	// The loader reads a model's files for every real executor: the model
	// side, known to no one executor.
	module + "/internal/loader": modelSide,
	// The executors serve nothing and know neither each other nor who
	// assembles them: each implements executor.Lifecycle in its own
	// package, and the GPU's loads its model through the loader, not the
	// CPU executor.
	module + "/internal/executor":      {"net/http", "github.com/prometheus/", "go.opentelemetry.io/", module + "/internal/server", module + "/internal/metrics", module + "/internal/tracing", module + "/internal/replica"},
	module + "/internal/executor/cpu":  {module + "/internal/executor/cuda", module + "/internal/executor/sim"},
	module + "/internal/executor/cuda": {module + "/internal/executor/cpu", module + "/internal/executor/sim"},
	module + "/internal/executor/sim":  {module + "/internal/executor/cpu", module + "/internal/executor/cuda"},

	// The ordered JSON object of bench's and inference-perf's reports: a
	// format, nothing of glassbox's.
	module + "/internal/jsonobject": {module + "/internal/"},
}

// replicaUsers may import replica besides the entry points.
var replicaUsers = map[string]bool{module + "/internal/simulate": true, module + "/internal/calibrate": true, module + "/internal/plan": true}

// simUsers may import the simulated executor besides the entry points, and
// with it the simulated model's text, vocabulary and tool calls, which
// live there alone: replica builds it, simulate runs it in virtual time
// (its tokenizer is the simulated vocabulary) and calibrate configures the
// simulated servers it fits. What needs a step's price, the GPU counters or
// the KV cache's size takes internal/costmodel instead.
var simUsers = map[string]bool{module + "/internal/replica": true, module + "/internal/simulate": true, module + "/internal/calibrate": true}

// inferencePerfUsers may import inferenceperf besides cmd/: calibrate reads
// the reference runs' inference-perf files.
var inferencePerfUsers = map[string]bool{module + "/internal/calibrate": true}

var modelSide = []string{"net/http", "github.com/prometheus/", "go.opentelemetry.io/", module + "/internal/engine", module + "/internal/server",
	module + "/internal/metrics", module + "/internal/tracing", module + "/internal/executor"}

func TestDependencyRules(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		for prefix, bad := range forbidden {
			if p.ImportPath != prefix && !strings.HasPrefix(p.ImportPath, prefix+"/") {
				continue
			}
			for _, d := range p.Deps {
				for _, b := range bad {
					if d == b || strings.HasPrefix(d, b) && (strings.HasSuffix(b, "/") || strings.HasPrefix(d, b+"/")) {
						t.Errorf("%s depends on %s (forbidden: %s)", p.ImportPath, d, b)
					}
				}
			}
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/cmd/") {
				t.Errorf("%s imports %s: nothing imports cmd/", p.ImportPath, imp)
			}
			// The public package is a façade for programs outside the
			// module: the inside never builds on it.
			if imp == module && strings.HasPrefix(p.ImportPath, module+"/internal/") {
				t.Errorf("%s imports the public package %s: internal/ must not depend on its façade", p.ImportPath, imp)
			}
			// replica is the composition root: only the entry points build on
			// it, and simulate, which assembles one in virtual time, with the
			// tools that describe servers to it.
			if imp == module+"/internal/replica" && p.ImportPath != module && !strings.HasPrefix(p.ImportPath, module+"/cmd/") && !replicaUsers[p.ImportPath] {
				t.Errorf("%s imports %s: only cmd/, the public package and simulate's tools assemble replicas", p.ImportPath, imp)
			}
			// The simulated executor holds the fake model's text: only
			// what builds or configures one imports it.
			if imp == module+"/internal/executor/sim" && p.ImportPath != module && !strings.HasPrefix(p.ImportPath, module+"/cmd/") && !simUsers[p.ImportPath] {
				t.Errorf("%s imports %s, the simulated executor and its fake model's text: take a step's price, the counters or the KV sizing from internal/costmodel", p.ImportPath, imp)
			}
			// inference-perf's files are read where a user names one (cmd's
			// --config) and by calibrate; the rest take the Plans it builds.
			if imp == module+"/internal/inferenceperf" && !strings.HasPrefix(p.ImportPath, module+"/cmd/") && !inferencePerfUsers[p.ImportPath] {
				t.Errorf("%s imports %s: only cmd/ and calibrate read inference-perf's files; take a workload.Plan (or bench.Config.Plan) instead", p.ImportPath, imp)
			}
		}
	}
}

// testOnly are the modules that only tests may import: the Helm chart's
// test (deploy/helm) validates against Kubernetes, Helm, Prometheus
// Operator, Gateway API and Inference Extension types, whose modules are in
// go.mod for that alone and must never reach the glassbox binary.
var testOnly = []string{"helm.sh/", "k8s.io/", "sigs.k8s.io/", "github.com/prometheus-operator/"}

func TestKubernetesModulesStayInTests(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, d := range p.Deps {
			for _, prefix := range testOnly {
				if strings.HasPrefix(d, prefix) {
					t.Errorf("%s depends on %s: %s* modules are for the chart's tests only", p.ImportPath, d, prefix)
				}
			}
		}
	}
}

// TestConfigurationFlowsFromMain: no package outside cmd/ reads the
// environment or registers itself in init(); configuration comes down from
// main as Config structs (STYLE.md §3). reftest, which only tests import,
// reads CI to decide whether missing reference data fails.
func TestConfigurationFlowsFromMain(t *testing.T) {
	const reftest = module + "/internal/reftest"
	envReads := map[string]bool{"Getenv": true, "LookupEnv": true, "Environ": true, "ExpandEnv": true}
	for _, p := range listPackages(t) {
		if slices.Contains(p.Deps, reftest) {
			t.Errorf("%s depends on %s, which is for tests only", p.ImportPath, reftest)
		}
		if strings.HasPrefix(p.ImportPath, module+"/cmd/") || p.ImportPath == reftest {
			continue
		}
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
					t.Errorf("%s: func init(): wire it from cmd/ instead", path)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "os" && envReads[sel.Sel.Name] {
					t.Errorf("%s: os.%s: read the environment in cmd/ and pass the value down", path, sel.Sel.Name)
				}
				return true
			})
		}
	}
}
