package source

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

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

// FuzzAppend: whatever parses as an exposition appends as a reading with
// its maps, and the doctor reads a window of two such readings.
func FuzzAppend(f *testing.F) {
	f.Add("# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total 3\n")
	f.Add("# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 2\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 1\nvllm:time_to_first_token_seconds_count 1\nvllm:time_to_first_token_seconds_sum 3\n")
	f.Add("DCGM_FI_PROF_GR_ENGINE_ACTIVE{modelName=\"NVIDIA H200\"} 0.9\nvllm:cache_config_info{num_gpu_blocks=\"x\"} 1\n")
	f.Fuzz(func(t *testing.T, in string) {
		sc, err := promtext.Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		w := doctor.NewWindow("fuzz", "fuzz")
		Append(w, time.Unix(0, 0), sc)
		Append(w, time.Unix(10, 0), sc)
		s := w.Snapshots[0]
		if s.Values == nil || s.Buckets == nil {
			t.Error("a reading must have its maps")
		}
		defaults.Diagnose(w, nil)
	})
}

func TestPythonCounterNames(t *testing.T) {
	sc, err := promtext.Parse(strings.NewReader("# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := doctor.NewWindow("test", "test")
	Append(w, time.Unix(0, 0), sc)
	if s := w.Snapshots[0]; s.Values[metricspec.NumPreemptions] != 3 {
		t.Errorf("preemptions = %v, want 3 (a counter family named without _total)", s.Values[metricspec.NumPreemptions])
	}
}

// TestRealCapturesAreSnapshots: every real vLLM scrape in ../shared/compat
// reads through the parser and the window code, and one reading gives the
// single-reading report with the gauges it has, not an error.
func TestRealCapturesAreSnapshots(t *testing.T) {
	for _, name := range []string{"vllm-0.30-metrics.txt", "vllm-0.7-lora-metrics.txt"} {
		path := reftest.Path(t, "compat", name)
		ms, err := File{Path: path}.Collect(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rep := defaults.Diagnose(ms[0].Window, nil)
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
		if q == nil || q.Compute.Answer != doctor.CantTell || q.KV.Answer != doctor.No || q.Scheduler.Answer != doctor.Yes || q.Scheduler.Kind != "no-work" {
			t.Errorf("%s: the three answers %+v; want compute can't tell, KV no, scheduler yes (no work)", name, q)
		}
		var b strings.Builder
		if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "one reading") {
			t.Errorf("%s: %v\n%s", name, err, b.String())
		}
	}
}
