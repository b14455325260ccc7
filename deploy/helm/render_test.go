// Package helm holds the tests of the Helm chart in glassbox/. They render
// it with Helm's own Go packages (loader, chartutil, engine) for default and
// non-default values and check every object against upstream's own
// definitions: strict decoding into the Kubernetes, Prometheus Operator,
// Gateway API and Inference Extension Go types (an unknown field fails),
// KEDA's ScaledObject against its CRD's OpenAPI schema (testdata/), the
// rules through promtool, the dashboards against the generator, and the
// objects against each other (selectors, ports, names).
//
// It has no code of its own. The heavy modules it imports (Helm, k8s.io,
// the operator's API) stay in these test files: internal/layering fails if
// a package of the binary reaches them.
package helm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	chartDir    = "glassbox"
	releaseName = "demo"
	namespace   = "llm"
	kubeVersion = "v1.31.0"
)

// object is one rendered manifest: its source template, kind and the
// strictly decoded value (a pointer to an upstream type, or the generic
// map for a kind checked against a CRD schema).
type object struct {
	template         string
	apiVersion, kind string
	name             string
	raw              []byte
	value            any
}

// manifests holds the objects of one rendering, by kind and name.
type manifests struct {
	values map[string]any // the coalesced values the chart rendered with
	objs   []object
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return c
}

// render renders the chart with the values YAML given, as 'helm install
// demo -n llm' would, and returns the rendered files by template name.
func render(t *testing.T, values string) (map[string]string, map[string]any, error) {
	t.Helper()
	c := loadChart(t)
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	caps.KubeVersion = *kv
	rv, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{
		Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return nil, nil, err
	}
	out, err := engine.Render(c, rv)
	if err != nil {
		return nil, nil, err
	}
	coalesced, _ := rv["Values"].(chartutil.Values)
	return out, coalesced.AsMap(), nil
}

// mustRender renders and decodes every object, failing on anything that is
// not an upstream type decoded strictly.
func mustRender(t *testing.T, values string) *manifests {
	t.Helper()
	files, vals, err := render(t, values)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	m := &manifests{values: vals}
	for _, name := range sortedKeys(files) {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, helpers
		}
		docs, err := splitYAML(files[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, doc := range docs {
			o, err := decode(name, doc)
			if err != nil {
				t.Errorf("%s: %v\n%s", name, err, doc)
				continue
			}
			m.objs = append(m.objs, o)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// splitYAML returns the non-empty documents of a multi-document stream.
func splitYAML(s string) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(s)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var probe map[string]any
		if err := yaml.Unmarshal(doc, &probe); err != nil {
			return nil, fmt.Errorf("parse document: %w", err)
		}
		if len(probe) > 0 {
			out = append(out, doc)
		}
	}
}

// get returns the objects of one kind.
func (m *manifests) get(kind string) []object {
	var out []object
	for _, o := range m.objs {
		if o.kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// one returns the only object of a kind, failing if there is not exactly one.
func one[T any](t *testing.T, m *manifests, kind string) *T {
	t.Helper()
	objs := m.get(kind)
	if len(objs) != 1 {
		t.Fatalf("%d %s objects, want 1", len(objs), kind)
	}
	v, ok := objs[0].value.(*T)
	if !ok {
		t.Fatalf("%s decoded as %T", kind, objs[0].value)
	}
	return v
}

// named returns the object of a kind and name.
func named[T any](t *testing.T, m *manifests, kind, name string) *T {
	t.Helper()
	for _, o := range m.get(kind) {
		if o.name == name {
			return o.value.(*T)
		}
	}
	t.Fatalf("no %s %q among %v", kind, name, m.names())
	return nil
}

func (m *manifests) names() []string {
	var out []string
	for _, o := range m.objs {
		out = append(out, o.kind+"/"+o.name)
	}
	return out
}

// value reads a coalesced value by dotted path.
func (m *manifests) value(path string) any {
	var v any = m.values
	for _, k := range strings.Split(path, ".") {
		mp, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mp[k]
	}
	return v
}

func (m *manifests) int(path string) int {
	switch v := m.value(path).(type) {
	case float64:
		return int(v)
	case int64:
		return int(v)
	case int:
		return v
	}
	return -1
}
