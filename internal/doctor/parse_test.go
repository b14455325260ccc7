package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/reftest"
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

func TestParseRangeResponse(t *testing.T) {
	in := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"le":"0.5"},"values":[[1700000000.5,"3"],[1700000001,"NaN"]]}]}}`
	got, err := parseRangeResponse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Metric["le"] != "0.5" || len(got[0].Values) != 2 || got[0].Values[0] != (promPoint{1700000000500, 3}) || !math.IsNaN(got[0].Values[1].v) {
		t.Errorf("got %+v", got)
	}
	for _, bad := range []string{
		`{"status":"error","errorType":"bad_data","error":"parse error"}`,
		`{"status":"success","data":{"resultType":"vector","result":[]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"values":[["x","1"]]}]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,"one"]]}]}}`,
		`not json`,
	} {
		if _, err := parseRangeResponse(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func FuzzParseRangeResponse(f *testing.F) {
	f.Add(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"le":"+Inf"},"values":[[1,"2"]]}]}}`)
	f.Add(`{"status":"error","error":"x"}`)
	f.Add(`{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1e300,"1"]]}]}}`)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := parseRangeResponse(strings.NewReader(in))
		if err != nil {
			return
		}
		// What parsed must survive a round trip through the wire format.
		type series struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		}
		var out []series
		for _, s := range got {
			o := series{Metric: s.Metric}
			for _, p := range s.Values {
				o.Values = append(o.Values, [2]any{float64(p.ms) / 1000, strconv.FormatFloat(p.v, 'g', -1, 64)})
			}
			out = append(out, o)
		}
		b, err := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": out}})
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseRangeResponse(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("re-encoded answer does not parse: %v\n%s", err, b)
		}
		if d := cmp.Diff(got, again, cmp.AllowUnexported(promPoint{}), cmpopts.EquateNaNs(), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("round trip (-first +second):\n%s", d)
		}
	})
}

func FuzzParseExposition(f *testing.F) {
	f.Add(exposition(healthy().window().Snapshots[3], healthy().window().Info))
	f.Add("# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total 3\n")
	f.Fuzz(func(t *testing.T, in string) {
		w := &Window{Info: map[string]map[string]string{}, Present: map[string]bool{}}
		s, err := parseExposition(strings.NewReader(in), testTime(), w)
		if err != nil {
			return
		}
		if s.Values == nil || s.Buckets == nil {
			t.Error("a parsed snapshot must have its maps")
		}
	})
}

func TestPythonCounterNames(t *testing.T) {
	w := &Window{Info: map[string]map[string]string{}, Present: map[string]bool{}}
	s, err := parseExposition(strings.NewReader("# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total 3\n"), testTime(), w)
	if err != nil {
		t.Fatal(err)
	}
	if s.Values[metricspec.NumPreemptions] != 3 {
		t.Errorf("preemptions = %v, want 3 (a counter family named without _total)", s.Values[metricspec.NumPreemptions])
	}
}

func TestReportOutputs(t *testing.T) {
	l := healthy()
	l.kv, l.waiting, l.running, l.busy = constant(0.95), constant(6), constant(8), 0.99
	rep := Diagnose(l.window(), &ClientView{Completed: 3})
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

// TestRealCapturesAreSnapshots: every real vLLM scrape in ../shared/compat
// reads through the parser and the window code, and one reading gives the
// single-reading report with the gauges it has, not an error.
func TestRealCapturesAreSnapshots(t *testing.T) {
	for _, name := range []string{"vllm-0.30-metrics.txt", "vllm-0.7-lora-metrics.txt"} {
		path := reftest.Path(t, "compat", name)
		rep, err := Run(context.Background(), Config{MetricsFile: path})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if rep.Engine != "vllm" || len(rep.Findings) != 1 || rep.Findings[0].Name != "single-reading" || rep.Readings != 1 {
			t.Errorf("%s: engine %s, %d readings, findings %v", name, rep.Engine, rep.Readings, rep.Names())
			continue
		}
		known := 0
		for _, e := range rep.Findings[0].Evidence {
			if e.Value != nil {
				known++
			}
		}
		if known < 3 {
			t.Errorf("%s: the snapshot knows %d of running, waiting and KV usage", name, known)
		}
		// One scrape answers what its gauges can and says it cannot tell
		// the rest: both captures are of idle servers.
		q := rep.Questions
		if q == nil || q.Compute.Answer != CantTell || q.KV.Answer != No || q.Scheduler.Answer != Yes || q.Scheduler.Kind != "no-work" {
			t.Errorf("%s: the three answers %+v; want compute can't tell, KV no, scheduler yes (no work)", name, q)
		}
		var b strings.Builder
		if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "one reading") {
			t.Errorf("%s: %v\n%s", name, err, b.String())
		}
	}
}
