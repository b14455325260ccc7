package inferenceperf

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/jsonobject"
)

// WriteReports writes a run of the configuration w as inference-perf
// writes its reports (reportgen), so that its users' analysis scripts read
// glassbox's runs (bench's, or simulate's through bench.Offline): into dir,
// summary_lifecycle_metrics.json, stage_N_lifecycle_metrics.json,
// per_request_lifecycle_metrics.json, adapter_NAME[_stage_N]_lifecycle_metrics.json,
// summary_prometheus_metrics.json, stage_N_prometheus_metrics.json and, for
// a replay of agent traces, summary_session_lifecycle_metrics.json,
// stage_N_session_lifecycle_metrics.json and per_session_lifecycle_metrics.json
// as the configuration's report block selects them, with prefix before each name
// (storage.local_storage.report_file_prefix), and config.yaml. A sweep's
// probe is in none of them, as in inference-perf. It returns the files
// written.
func WriteReports(r *bench.Result, w *Config, dir, prefix string, config []byte) ([]string, error) {
	if w == nil || len(r.Passes) == 0 {
		return nil, errors.New("write inference-perf reports: the run has no inference-perf configuration")
	}
	p := r.Passes[0]
	rc := &w.Report
	lc := rc.RequestLifecycle
	on := func(b *bool, def bool) bool {
		if b == nil {
			return def
		}
		return *b
	}
	x := ipContext{pass: p, pcts: lc.Percentiles, goodput: rc.Goodput, maxMessages: *lc.MaxErrorMessages, slo: ipSLOHeaders(&w.API)}
	recs := x.records()
	var files []ipFile
	if on(lc.Summary, true) && len(recs) > 0 {
		files = append(files, ipFile{"summary_lifecycle_metrics", x.summarize(recs, nil)})
	}
	stages := p.Schedule
	if on(lc.PerStage, true) {
		for s := range stages {
			if rs := filterRecs(recs, func(q *ipRecord) bool { return q.stage == s }); len(rs) > 0 {
				files = append(files, ipFile{fmt.Sprintf("stage_%d_lifecycle_metrics", s), x.summarize(rs, &stages[s])})
			}
		}
	}
	if on(lc.PerRequest, false) {
		files = append(files, ipFile{"per_request_lifecycle_metrics", x.perRequest(recs)})
	}
	var adapters []string
	for _, q := range recs {
		if q.o.Model != "" && !slices.Contains(adapters, q.o.Model) {
			adapters = append(adapters, q.o.Model)
		}
	}
	if on(lc.PerAdapter, true) {
		for _, a := range adapters {
			files = append(files, ipFile{"adapter_" + a + "_lifecycle_metrics", x.summarize(filterRecs(recs, func(q *ipRecord) bool { return q.o.Model == a }), nil)})
		}
	}
	if on(lc.PerAdapterStage, false) {
		for _, a := range adapters {
			for s := range stages {
				if rs := filterRecs(recs, func(q *ipRecord) bool { return q.o.Model == a && q.stage == s }); len(rs) > 0 {
					files = append(files, ipFile{fmt.Sprintf("adapter_%s_stage_%d_lifecycle_metrics", a, s), x.summarize(rs, &stages[s])})
				}
			}
		}
	}
	if pr := rc.Prometheus; p.Server != nil && (pr == nil || on(pr.Summary, true)) {
		if o := prometheusSummary(p.Server, nil, nil); o != nil {
			files = append(files, ipFile{"summary_prometheus_metrics", o})
		}
	}
	if pr := rc.Prometheus; p.Server != nil && pr != nil && on(pr.PerStage, false) {
		for s := range stages {
			first, last := bench.Span(stageOutputs(p.Outputs, s))
			if o := prometheusSummary(p.Server, &first, &last); o != nil {
				files = append(files, ipFile{fmt.Sprintf("stage_%d_prometheus_metrics", s), o})
			}
		}
	}
	if w.Data.Type == "otel_trace_replay" {
		files = append(files, x.sessionFiles(rc.SessionLifecycle)...)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("write inference-perf reports: %w", err)
	}
	var written []string
	for _, f := range files {
		path := filepath.Join(dir, prefix+f.name+".json")
		if err := writeReport(path, f.contents); err != nil {
			return written, fmt.Errorf("write inference-perf report %s: %w", f.name, err)
		}
		written = append(written, path)
	}
	if config != nil {
		path := filepath.Join(dir, prefix+"config.yaml")
		if err := os.WriteFile(path, config, 0o644); err != nil {
			return written, fmt.Errorf("write inference-perf report: %w", err)
		}
		written = append(written, path)
	}
	return written, nil
}

type ipFile struct {
	name     string
	contents any
}

// writeReport writes one report as inference-perf's json.dumps(indent=2).
func writeReport(path string, v any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if rs, ok := v.(ipRecords); ok {
		err = rs.writeTo(f)
	} else {
		var b []byte
		if b, err = json.MarshalIndent(v, "", "  "); err == nil {
			_, err = f.Write(b)
		}
	}
	return errors.Join(err, f.Close())
}

// ipContext is what every summary of one pass shares.
type ipContext struct {
	pass        *bench.Pass
	pcts        []float64
	goodput     *Goodput
	maxMessages int
	slo         [2]*float64 // per-request TTFT and TPOT SLOs from api.headers, seconds
}

// ipRecord is one request as inference-perf's RequestLifecycleMetric
// records it, in seconds.
type ipRecord struct {
	o                      *bench.Output
	stage                  int
	scheduled, start, end  float64
	tokenTimes             []float64 // one per output token, a chunk's tokens at its arrival
	inputTokens, outTokens int
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// records are the pass's requests that were sent, as inference-perf sees
// them: a chunk's token(s) at the chunk's arrival, a unary answer with no
// token times, a failure with no input tokens.
func (x *ipContext) records() []*ipRecord {
	var out []*ipRecord
	for i := range x.pass.Outputs {
		o := &x.pass.Outputs[i]
		if o.Start.IsZero() || o.Stage < 0 {
			continue // never sent, or a sweep's probe
		}
		end := o.End
		if end.IsZero() {
			end = o.Start.Add(o.Latency)
		}
		q := &ipRecord{o: o, stage: o.Stage, scheduled: unix(x.pass.Start.Add(o.Due)), start: unix(o.Start), end: unix(end)}
		if o.Success {
			q.inputTokens, q.outTokens = o.PromptLen, o.OutputTokens
			if !o.Unary {
				t := o.Start.Add(o.TTFT)
				q.tokenTimes = append(q.tokenTimes, unix(t))
				for _, g := range o.ITL {
					t = t.Add(g)
					q.tokenTimes = append(q.tokenTimes, unix(t))
				}
			}
		}
		out = append(out, q)
	}
	return out
}

func filterRecs(rs []*ipRecord, keep func(*ipRecord) bool) []*ipRecord {
	var out []*ipRecord
	for _, q := range rs {
		if keep(q) {
			out = append(out, q)
		}
	}
	return out
}

func stageOutputs(outs []bench.Output, s int) []bench.Output {
	var out []bench.Output
	for _, o := range outs {
		if o.Stage == s {
			out = append(out, o)
		}
	}
	return out
}

// object and field are a JSON object whose keys keep their order (as inference-perf's
// reports list them), and one of its keys.
type (
	object = jsonobject.Object
	field  = jsonobject.Field
)
