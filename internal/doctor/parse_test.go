package doctor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseBenchResult(t *testing.T) {
	in := `{"date":"20250101-000000","completed":90,"failed":10,"duration":12.5,"request_throughput":7.2,
	"output_throughput":900,"mean_ttft_ms":120,"p99_ttft_ms":800,"mean_e2el_ms":2000,
	"errors":["","context deadline exceeded (Client.Timeout exceeded while awaiting headers)","HTTP 503"],
	"server":{"ttft":{"count":90,"mean_ms":100}}}`
	got, err := ParseBenchResult(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &ClientView{Completed: 90, Failed: 10, Duration: 12.5, RequestThroughput: 7.2, OutputThroughput: 900,
		MeanTTFTms: 120, P99TTFTms: 800, MeanE2ELms: 2000, Timeouts: 1, ServerTTFTMeanMS: 100}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	sweep := `{"sweep":[{"completed":1},{"completed":5,"failed":2}]}`
	if got, err := ParseBenchResult(strings.NewReader(sweep)); err != nil || got.Completed != 5 || got.Failed != 2 {
		t.Errorf("sweep: %+v %v, want the last pass", got, err)
	}
	for _, bad := range []string{``, `[]`, `{"x":1}`, `{"sweep":[]}`, `{"completed":-1}`} {
		if _, err := ParseBenchResult(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseBenchResult(f *testing.F) {
	f.Add(`{"completed":3,"failed":1,"errors":["timeout"],"server":{"ttft":{"mean_ms":1}}}`)
	f.Add(`{"sweep":[{"completed":1e308}]}`)
	f.Add(`{"completed":"x"}`)
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ParseBenchResult(strings.NewReader(in))
		if err != nil {
			return
		}
		if c.Completed < 0 || c.Failed < 0 || c.Timeouts < 0 {
			t.Errorf("negative counts from %q: %+v", in, c)
		}
		// Whatever parsed must serialise: the report carries it as JSON.
		if _, err := json.Marshal(c); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	})
}

func TestReportOutputs(t *testing.T) {
	l := healthy()
	l.kv, l.waiting, l.running, l.busy = constant(0.95), constant(6), constant(8), 0.99
	rep := diagnose(l.window(), &ClientView{Completed: 3})
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[WARNING] kv-capacity-bound", "promql: avg_over_time(max(vllm:kv_cache_usage_perc{instance=\"test:8000\"})[19s:1s])",
		"fix: --kv-cache-memory-bytes 3500M", "exit status 1"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Worst    string `json:"worst"`
		ExitCode int    `json:"exit_code"`
		Findings []struct {
			Name     string
			Severity string
			Evidence []struct {
				Value  *float64
				PromQL string
			}
		}
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Worst != "warning" || back.ExitCode != 1 || len(back.Findings) == 0 || back.Findings[0].Severity != "warning" {
		t.Errorf("json: %+v", back)
	}
}
