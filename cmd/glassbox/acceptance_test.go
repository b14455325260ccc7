package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// vllmSpec is vLLM's exposition of its spec-decode counters as Python's
// prometheus_client writes it: _total families with their _created
// gauges, for two engines (and a scrape's other families around them).
const vllmSpec = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 600.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 400.0
# HELP vllm:spec_decode_num_drafts_created Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_created gauge
vllm:spec_decode_num_drafts_created{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.7358e+09
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1800.0
vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1200.0
# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 900.0
vllm:spec_decode_num_accepted_tokens_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 600.0
# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct",position="0"} 420.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct",position="1"} 300.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct",position="2"} 180.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct",position="0"} 280.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct",position="1"} 200.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct",position="2"} 120.0
`

// TestSpecCounters: vLLM's four families summed over engines, each
// position on its own; a scrape without one names the family missing.
func TestSpecCounters(t *testing.T) {
	c, err := specCounters(scrapeOf(t, vllmSpec))
	if err != nil {
		t.Fatal(err)
	}
	if c.Drafts != 1000 || c.DraftTokens != 3000 || c.Accepted != 1500 || !slices.Equal(c.PerPos, []float64{700, 500, 300}) {
		t.Errorf("counters %+v", c)
	}
	if r, err := c.Rates(); err != nil || !slices.Equal(r, []float64{0.7, 0.5, 0.3}) {
		t.Errorf("rates %v, %v", r, err)
	}
	for _, family := range []string{"vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_accepted_tokens_per_pos_total"} {
		var kept []string
		for _, line := range strings.Split(vllmSpec, "\n") {
			if !strings.Contains(line, family) {
				kept = append(kept, line)
			}
		}
		if _, err := specCounters(scrapeOf(t, strings.Join(kept, "\n"))); err == nil || !strings.Contains(err.Error(), family) {
			t.Errorf("without %s: %v", family, err)
		}
	}
	bad := strings.ReplaceAll(vllmSpec, `position="2"`, `position="two"`)
	if _, err := specCounters(scrapeOf(t, bad)); err == nil || !strings.Contains(err.Error(), `"two"`) {
		t.Errorf("a position that is no number: %v", err)
	}
}

// TestSpecCountersOfRealCaptures: the real vLLM servers in ../shared/compat
// ran without speculation, so fitting acceptance from them
// (--spec-acceptance-from) names the family that is missing.
func TestSpecCountersOfRealCaptures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(reftest.Path(t, "compat"), "*-metrics.txt"))
	if len(files) == 0 {
		t.Fatal("no *-metrics.txt capture in ../shared/compat")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := specCounters(scrapeOf(t, string(raw))); err == nil || !strings.Contains(err.Error(), "vllm:spec_decode_num_drafts_total") {
			t.Errorf("%s: spec-decode counters of a server without speculation: %v", filepath.Base(f), err)
		}
	}
}

func scrapeOf(t *testing.T, text string) *promtext.Scrape {
	t.Helper()
	s, err := promtext.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
