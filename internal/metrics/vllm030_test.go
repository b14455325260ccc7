package metrics

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// structure is what a scrape looks like, values aside: families in order,
// each with its TYPE, HELP, the label names of each sample kind and a
// histogram's le values.
type structure struct {
	order    []string
	families map[string]*familyShape
}

type familyShape struct {
	typ, help string
	samples   map[string][]string // sample name → label names as written
	les       []string
}

var (
	helpLine = regexp.MustCompile(`^# HELP (\S+) (.*)$`)
	typeLine = regexp.MustCompile(`^# TYPE (\S+) (\S+)$`)
)

// readStructure reads exposition text line by line, keeping the raw label
// order (Prometheus' parser would sort it). Lines starting "# SOURCE" are
// the capture's provenance, not part of the scrape.
func readStructure(t *testing.T, text string) structure {
	t.Helper()
	s := structure{families: map[string]*familyShape{}}
	var cur *familyShape
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := helpLine.FindStringSubmatch(line); m != nil {
			cur = &familyShape{help: m[2], samples: map[string][]string{}}
			s.families[m[1]] = cur
			s.order = append(s.order, m[1])
			continue
		}
		if m := typeLine.FindStringSubmatch(line); m != nil {
			if f := s.families[m[1]]; f != nil {
				f.typ = m[2]
			} else {
				cur = &familyShape{typ: m[2], samples: map[string][]string{}}
				s.families[m[1]] = cur
				s.order = append(s.order, m[1])
			}
			continue
		}
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil || cur == nil {
			t.Fatalf("not a sample line: %q", line)
		}
		var names []string
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			names = append(names, p[1])
			if p[1] == "le" && !slices.Contains(cur.les, p[2]) {
				cur.les = append(cur.les, p[2])
			}
		}
		if _, ok := cur.samples[m[1]]; !ok {
			cur.samples[m[1]] = names
		}
	}
	return s
}

// glassboxScrape is serve's exposition for a model with the capture's
// max_model_len (16384: its token buckets stop at 10000), after one API
// request, built as serve builds it.
func glassboxScrape(t *testing.T) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg := testConfig()
	cfg.MaxModelLen = 16384
	m, err := New(cfg, reg)
	if err != nil {
		t.Fatal(err)
	}
	m.InstrumentHTTP("/v1/completions", http.NotFoundHandler()).ServeHTTP(
		httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/completions", nil))
	rec := httptest.NewRecorder()
	Handler(reg).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// TestStructureMatchesVLLM030 diffs the structure of glassbox's /metrics
// against a complete real scrape of vLLM 0.30 (../shared/compat): the same
// families in the same order, with the same TYPE, HELP, label names in the
// same (sorted) order, the same buckets and the same _created gauges. Every
// difference it tolerates is listed below with its reason; anything else
// fails.
func TestStructureMatchesVLLM030(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(sharedDir(t), "compat", "vllm-0.30-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	vllm := readStructure(t, string(raw))
	ours := readStructure(t, glassboxScrape(t))

	// Families of the capture glassbox does not have.
	onlyVLLM := func(name string) string {
		switch {
		case strings.HasPrefix(name, "python_"):
			return "the Python runtime's; glassbox exports the Go runtime's go_* instead"
		}
		return ""
	}
	// Families glassbox has that the capture does not.
	onlyOurs := func(name string) string {
		switch {
		case strings.HasPrefix(name, "go_"):
			return "the Go runtime's, in place of python_*"
		case strings.HasPrefix(name, "glassbox_"):
			return "glassbox's own additions (DESIGN.md §3)"
		case strings.HasPrefix(name, "vllm:admission_rejections_"):
			return "vLLM 0.32's admission counter, after 0.30"
		case strings.HasPrefix(name, "vllm:prompt_tokens_cached_by_source_"):
			return "cached prompt tokens by tier (vLLM PR #56318), after 0.30"
		case strings.HasPrefix(name, "process_") && vllm.families[name] == nil:
			return "client_golang's process collector has more than Python's"
		}
		return ""
	}
	for _, name := range vllm.order {
		if ours.families[name] == nil && onlyVLLM(name) == "" {
			t.Errorf("glassbox lacks %s (%s)", name, vllm.families[name].typ)
		}
	}
	for _, name := range ours.order {
		if vllm.families[name] == nil && onlyOurs(name) == "" {
			t.Errorf("glassbox has %s, which vLLM 0.30 does not", name)
		}
	}

	// The common families, in the same order.
	var common, vllmOrder []string
	for _, name := range ours.order {
		if vllm.families[name] != nil {
			common = append(common, name)
		}
	}
	for _, name := range vllm.order {
		if ours.families[name] != nil {
			vllmOrder = append(vllmOrder, name)
		}
	}
	if diff := cmp.Diff(vllmOrder, common); diff != "" {
		t.Errorf("family order (-vLLM +glassbox):\n%s", diff)
	}

	for _, name := range common {
		v, o := vllm.families[name], ours.families[name]
		if v.typ != o.typ {
			t.Errorf("%s: TYPE %s, vLLM's is %s", name, o.typ, v.typ)
		}
		if v.help != o.help && !strings.HasPrefix(name, "process_") {
			t.Errorf("%s: HELP %q, vLLM's is %q", name, o.help, v.help)
		}
		if diff := cmp.Diff(v.les, o.les); diff != "" {
			t.Errorf("%s: buckets (-vLLM +glassbox):\n%s", name, diff)
		}
		for sample, vl := range v.samples {
			ol, ok := o.samples[sample]
			if !ok {
				// The capture served two HTTP handlers; one request here
				// creates the same kinds of samples.
				t.Errorf("%s: no %s sample", name, sample)
				continue
			}
			if diff := cmp.Diff(vl, ol); diff != "" {
				t.Errorf("%s: label names (-vLLM +glassbox):\n%s", sample, diff)
			}
		}
		for sample, ol := range o.samples {
			if !slices.IsSorted(ol) {
				t.Errorf("%s: labels %v are not sorted", sample, ol)
			}
		}
	}
	// Every counter and histogram is followed by its _created gauge, as
	// vLLM's single API server writes it.
	for i, name := range ours.order {
		f := ours.families[name]
		base := name
		switch f.typ {
		case "counter":
			base = strings.TrimSuffix(name, "_total")
		case "histogram", "summary":
		default:
			continue
		}
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue // the runtime's collectors have no creation times, as Python's process collector
		}
		if i+1 >= len(ours.order) || ours.order[i+1] != base+"_created" || ours.families[base+"_created"].typ != "gauge" {
			t.Errorf("%s is not followed by its %s_created gauge", name, base)
		}
	}
	t.Logf("compared %d families with vLLM 0.30's scrape", len(common))
}

// TestCacheConfigInfoValues: the info series tells the truth about the
// cache, with vLLM's spelling of every value.
func TestCacheConfigInfoValues(t *testing.T) {
	c := metricspec.CacheConfig{BlockSize: 16, NumGPUBlocks: 1000, MaxModelLen: 4096, EnablePrefixCaching: true,
		GPUMemoryUtilization: 0.9, CacheDtype: "auto", PrefixCachingHashAlgo: "sha256"}
	l := c.Labels()
	for k, want := range map[string]string{
		"block_size": "16", "num_gpu_blocks": "1000", "kv_cache_size_tokens": "16000",
		"kv_cache_max_concurrency": "3.90625", "enable_prefix_caching": "True", "gpu_memory_utilization": "0.9",
		"kv_cache_memory_bytes": "None", "user_specified_block_size": "False",
	} {
		if l[k] != want {
			t.Errorf("%s = %q, want %q", k, l[k], want)
		}
	}
	if len(l) != 33 {
		t.Errorf("%d labels, want vLLM 0.30's 33 (34 with engine)", len(l))
	}

}
