package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// WriteInferencePerfReports writes a run of an inference-perf
// configuration as inference-perf writes its reports (reportgen), so that
// its users' analysis scripts read glassbox's runs: into dir,
// summary_lifecycle_metrics.json, stage_N_lifecycle_metrics.json,
// per_request_lifecycle_metrics.json, adapter_NAME[_stage_N]_lifecycle_metrics.json,
// summary_prometheus_metrics.json and stage_N_prometheus_metrics.json as the
// configuration's report block selects them, with prefix before each name
// (storage.local_storage.report_file_prefix), and config.yaml. A sweep's
// probe is in none of them, as in inference-perf. It returns the files
// written.
func (r *Result) WriteInferencePerfReports(dir, prefix string, config []byte) ([]string, error) {
	w := r.Config.Workload
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
			first, last := span(stageOutputs(p.Outputs, s))
			if o := prometheusSummary(p.Server, &first, &last); o != nil {
				files = append(files, ipFile{fmt.Sprintf("stage_%d_prometheus_metrics", s), o})
			}
		}
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
	pass        *Pass
	pcts        []float64
	goodput     *workload.IPGoodput
	maxMessages int
	slo         [2]*float64 // per-request TTFT and TPOT SLOs from api.headers, seconds
}

// ipRecord is one request as inference-perf's RequestLifecycleMetric
// records it, in seconds.
type ipRecord struct {
	o                      *Output
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

func stageOutputs(outs []Output, s int) []Output {
	var out []Output
	for _, o := range outs {
		if o.Stage == s {
			out = append(out, o)
		}
	}
	return out
}

// ipSummary is inference-perf's summarize: nil for no values, else the
// mean, min, max and each percentile ("median" for the 50th).
func (x *ipContext) ipSummary(v []float64) any {
	if len(v) == 0 {
		return nil
	}
	s := slices.Clone(v)
	slices.Sort(s)
	o := object{{"mean", mean(s)}, {"min", s[0]}, {"max", s[len(s)-1]}}
	for _, p := range x.pcts {
		k := "median"
		if p != 50 {
			k = "p" + strconv.FormatFloat(p, 'g', -1, 64)
		}
		o = append(o, field{k, percentile(s, p)})
	}
	return o
}

// summarize is inference-perf's summarize_requests over rs, with a stage's
// load fields when st is set.
func (x *ipContext) summarize(rs []*ipRecord, st *workload.Stage) object {
	var ok, failed []*ipRecord
	minStart, maxEnd, maxStart := math.Inf(1), math.Inf(-1), math.Inf(-1)
	var delays []float64
	for _, q := range rs {
		if q.o.Success {
			ok = append(ok, q)
		} else {
			failed = append(failed, q)
		}
		minStart, maxStart, maxEnd = min(minStart, q.start), max(maxStart, q.start), max(maxEnd, q.end)
		delays = append(delays, q.start-q.scheduled)
	}
	total := maxEnd - minStart
	load := object{{"count", len(rs)}, {"schedule_delay", x.ipSummary(delays)}}
	if st != nil {
		send := maxStart - minStart
		achieved := 0.0
		if send > 0 {
			achieved = float64(len(rs)) / send
		}
		load = append(load, field{"send_duration", send}, field{"requested_rate", st.Rate}, field{"achieved_rate", achieved})
		if st.MaxConcurrency > 0 {
			load = append(load, field{"concurrency", st.MaxConcurrency})
		}
	}
	per := func(v float64) float64 {
		if total > 0 {
			return v / total
		}
		return 0
	}
	var lat, ntpot, tpot, ttft, itl, sizes, outLens []float64
	var in, out float64
	mismatched := 0
	zeros := make([]float64, len(ok))
	var prompt []float64
	cached := 0.0
	for _, q := range ok {
		lat = append(lat, q.end-q.start)
		n := float64(q.outTokens)
		if n > 0 {
			ntpot = append(ntpot, (q.end-q.start)/n)
		} else {
			ntpot = append(ntpot, 0)
		}
		if len(q.tokenTimes) > 1 {
			ttft = append(ttft, q.tokenTimes[0]-q.start)
			if q.outTokens > 1 {
				tpot = append(tpot, (q.tokenTimes[len(q.tokenTimes)-1]-q.tokenTimes[0])/(n-1))
			}
			for i := 1; i < len(q.tokenTimes); i++ {
				itl = append(itl, q.tokenTimes[i]-q.tokenTimes[i-1])
			}
		}
		if !q.o.Unary && len(q.tokenTimes) != q.outTokens {
			mismatched++
		}
		sizes = append(sizes, float64(q.o.RequestBytes))
		outLens = append(outLens, n)
		prompt = append(prompt, float64(q.inputTokens))
		in += float64(q.inputTokens)
		out += n
		if q.o.CachedTokens != nil {
			cached += float64(*q.o.CachedTokens)
		}
	}
	promptTokens := object{{"total", in}, {"cached", cached}, {"uncached", max(in-cached, 0)}}
	if d, ok := x.ipSummary(prompt).(object); ok {
		promptTokens = append(promptTokens, d...)
	}
	outTokens := object{{"total", out}}
	if d, ok := x.ipSummary(outLens).(object); ok {
		outTokens = append(outTokens, d...)
	}
	successes := object{
		{"count", len(ok)},
		{"latency", object{{"request_latency", x.ipSummary(lat)}, {"normalized_time_per_output_token", x.ipSummary(ntpot)},
			{"time_per_output_token", x.ipSummary(tpot)}, {"time_to_first_token", x.ipSummary(ttft)}, {"inter_token_latency", x.ipSummary(itl)}}},
		{"throughput", object{{"input_tokens_per_sec", per(in)}, {"output_tokens_per_sec", per(out)}, {"total_tokens_per_sec", per(in + out)},
			{"requests_per_sec", per(float64(len(ok)))}, {"images_per_sec", 0.0}, {"videos_per_sec", 0.0}, {"audios_per_sec", 0.0}}},
		{"request_size_bytes", x.ipSummary(sizes)},
		// glassbox sends text only: no image, video or audio.
		{"image", object{{"count", x.ipSummary(zeros)}, {"pixels", nil}, {"bytes", nil}, {"aspect_ratio", nil}}},
		{"video", object{{"count", x.ipSummary(zeros)}, {"frames", nil}, {"pixels", nil}, {"bytes", nil}, {"aspect_ratio", nil}}},
		{"audio", object{{"count", x.ipSummary(zeros)}, {"seconds", nil}, {"bytes", nil}}},
		{"prompt_tokens", promptTokens},
		{"output_len", x.ipSummary(outLens)},
		{"output_tokens", outTokens},
		{"token_count_mismatches", mismatched},
	}
	if g := x.goodputMetrics(ok); g != nil {
		successes = append(successes, field{"goodput_metrics", g})
	}
	var failedLat []float64
	for _, q := range failed {
		failedLat = append(failedLat, q.end-q.start)
	}
	failedPrompt := object{{"total", 0.0}, {"cached", 0.0}, {"uncached", 0.0}}
	if d, ok := x.ipSummary(make([]float64, len(failed))).(object); ok {
		failedPrompt = append(failedPrompt, d...)
	}
	failures := object{{"count", len(failed)}, {"request_latency", x.ipSummary(failedLat)}, {"prompt_tokens", failedPrompt},
		{"by_label", x.errorCounts(failed)}}
	return object{{"benchmark_time_seconds", total}, {"load_summary", load}, {"successes", successes}, {"failures", failures}}
}

// ipSLOHeaders are the per-request TTFT and TPOT SLOs inference-perf reads
// from the request headers (x-slo-ttft-ms, x-slo-tpot-ms by default),
// in seconds.
func ipSLOHeaders(a *workload.IPAPI) [2]*float64 {
	unit := "ms"
	if a.SLOUnit != nil {
		unit = *a.SLOUnit
	}
	names := [2]string{"x-slo-ttft-" + unit, "x-slo-tpot-" + unit}
	if a.SLOTTFTHeader != nil {
		names[0] = *a.SLOTTFTHeader
	}
	if a.SLOTPOTHeader != nil {
		names[1] = *a.SLOTPOTHeader
	}
	scale := map[string]float64{"s": 1, "ms": 1e-3, "us": 1e-6}[unit]
	var out [2]*float64
	for k, v := range a.Headers {
		for i, n := range names {
			if strings.EqualFold(k, n) {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					s := f * scale
					out[i] = &s
				}
			}
		}
	}
	return out
}

// goodputMetrics is inference-perf's calculate_goodput_metrics: a request
// is good when it meets every SLO that applies to it (report.goodput's
// constraints, or the SLO headers of a streamed request).
func (x *ipContext) goodputMetrics(ok []*ipRecord) any {
	var cons map[string]float64
	if x.goodput != nil {
		cons = x.goodput.Constraints
	}
	if len(cons) == 0 && x.slo[0] == nil && x.slo[1] == nil || len(ok) == 0 {
		return nil
	}
	minStart, maxEnd := math.Inf(1), math.Inf(-1)
	for _, q := range ok {
		minStart, maxEnd = min(minStart, q.start), max(maxEnd, q.end)
	}
	elapsed := maxEnd - minStart
	order := []string{"ttft", "tpot", "itl", "ntpot", "request_latency"}
	applicable, met := map[string]int{}, map[string]int{}
	good, goodTokens := 0, 0
	for _, q := range ok {
		streamed := len(q.tokenTimes) > 1
		var vals [5]*float64
		if streamed {
			t := q.tokenTimes[0] - q.start
			vals[0] = &t
			if q.outTokens > 1 {
				tp := (q.tokenTimes[len(q.tokenTimes)-1] - q.tokenTimes[0]) / float64(q.outTokens-1)
				vals[1] = &tp
			}
			il := (q.tokenTimes[len(q.tokenTimes)-1] - q.tokenTimes[0]) / float64(len(q.tokenTimes)-1)
			vals[2] = &il
		}
		nt := 0.0
		if q.outTokens > 0 {
			nt = (q.end - q.start) / float64(q.outTokens)
		}
		lat := q.end - q.start
		vals[3], vals[4] = &nt, &lat
		isGood := true
		for i, k := range order {
			slo, has := cons[k]
			sloPtr := &slo
			if !has {
				sloPtr = nil
			}
			if i < 2 && streamed && x.slo[i] != nil {
				sloPtr = x.slo[i] // a request's own header wins
			}
			if sloPtr == nil {
				continue
			}
			applicable[k]++
			if vals[i] != nil && *vals[i] <= *sloPtr {
				met[k]++
			} else {
				isGood = false
			}
		}
		if isGood {
			good++
			goodTokens += q.inputTokens + q.outTokens
		}
	}
	rate := func(v float64) float64 {
		if elapsed > 0 {
			return v / elapsed
		}
		return 0
	}
	o := object{{"goodput_percentage", float64(good) / float64(len(ok)) * 100}, {"request_goodput", rate(float64(good))},
		{"token_goodput", rate(float64(goodTokens))}, {"good_requests", good}, {"total_requests", len(ok)}}
	for _, k := range order {
		if n := applicable[k]; n > 0 {
			o = append(o, field{k + "_attainment_percentage", float64(met[k]) / float64(n) * 100})
		}
	}
	return o
}

var (
	ipCodeLabels = map[string]string{"429": "Rate Limit", "500": "Internal Server Error", "502": "Bad Gateway",
		"503": "Service Unavailable", "504": "Gateway Timeout"}
	ipHTTPLabels = []struct {
		re    *regexp.Regexp
		label string
	}{
		{regexp.MustCompile(`(?i)context.window|context length|maximum context|max.?tokens|token.?limit`), "Context Window"},
		{regexp.MustCompile(`(?i)invalid.?json|json.?parse|malformed.?json|unexpected.?token|expecting value|unterminated string|expecting ',' delimiter`), "Invalid JSON"},
		{regexp.MustCompile(`(?i)timeout|timed.?out`), "Timeout"},
		{regexp.MustCompile(`(?i)model.?not.?found|no such model`), "Model Not Found"},
	}
	ipOtherLabels = []struct {
		re    *regexp.Regexp
		label string
	}{
		{regexp.MustCompile(`(?i)timeout|timed.?out`), "Timeout"},
		{regexp.MustCompile(`(?i)connection.?refused|connect`), "Connection Error"},
	}
)

// errorMessage is what inference-perf keeps of a failure: an HTTP error's
// body's error.message when it is OpenAI's JSON, else the text.
func errorMessage(o *Output) string {
	raw := o.Error
	if o.ErrorBody != "" {
		raw = o.ErrorBody
	}
	var body map[string]any
	if json.Unmarshal([]byte(raw), &body) == nil {
		e, _ := body["error"].(map[string]any)
		if e == nil {
			e = body
		}
		if m, ok := e["message"]; ok {
			return fmt.Sprint(m)
		}
	}
	return raw
}

// errorLabel is inference-perf's make_concise_label.
func errorLabel(typ, msg string) string {
	if code, ok := strings.CutPrefix(typ, "HTTP Error "); ok {
		if l, ok := ipCodeLabels[code]; ok {
			return code + " - " + l
		}
		for _, l := range ipHTTPLabels {
			if l.re.MatchString(msg) {
				return code + " - " + l.label
			}
		}
		return code + " - other"
	}
	for _, l := range ipOtherLabels {
		if l.re.MatchString(msg) {
			return l.label
		}
	}
	return strings.ToLower(strings.TrimSpace(typ))
}

// errorCounts is inference-perf's build_error_counts: per label, how many
// and the distinct messages (at most max_error_messages), the most
// frequent label first.
func (x *ipContext) errorCounts(failed []*ipRecord) object {
	counts := map[string]int{}
	var labels []string
	msgs := map[string][]string{}
	for _, q := range failed {
		msg := errorMessage(q.o)
		typ := q.o.ErrorType
		if typ == "" {
			typ = "ClientError"
		}
		l := errorLabel(typ, msg)
		if counts[l] == 0 {
			labels = append(labels, l)
		}
		counts[l]++
		if !slices.Contains(msgs[l], msg) && len(msgs[l]) < x.maxMessages {
			msgs[l] = append(msgs[l], msg)
		}
	}
	slices.SortStableFunc(labels, func(a, b string) int { return counts[b] - counts[a] })
	out := object{}
	for _, l := range labels {
		var ms []object
		for _, m := range msgs[l] {
			ms = append(ms, object{{"message", m}})
		}
		if ms == nil {
			ms = []object{}
		}
		out = append(out, field{l, object{{"count", counts[l]}, {"messages", ms}}})
	}
	return out
}

// The records of per_request_lifecycle_metrics.json, as structs (fields
// in inference-perf's order): a run has one per request, so they are
// written one at a time, not built as one value.
type (
	ipRequestRecord struct {
		StartTime float64        `json:"start_time"`
		EndTime   float64        `json:"end_time"`
		Request   *string        `json:"request"`
		Response  string         `json:"response"`
		Info      ipInfo         `json:"info"`
		Error     *ipErrorRecord `json:"error"`
	}
	ipInfo struct {
		RequestMetrics struct {
			Text struct {
				InputTokens int `json:"input_tokens"`
			} `json:"text"`
			Image *struct{} `json:"image"`
			Video *struct{} `json:"video"`
			Audio *struct{} `json:"audio"`
		} `json:"request_metrics"`
		ResponseMetrics ipResponseMetrics `json:"response_metrics"`
		ExtraInfo       struct{}          `json:"extra_info"`
		LoRAAdapter     *string           `json:"lora_adapter"`
		Labels          struct{}          `json:"labels"`
		InputTokens     int               `json:"input_tokens"`
	}
	ipResponseMetrics struct {
		OutputTokens     int        `json:"output_tokens"`
		ServerUsage      *ipUsage   `json:"server_usage"`
		ResponseChunks   *[]string  `json:"response_chunks,omitempty"`
		ChunkTimes       *[]float64 `json:"chunk_times,omitempty"`
		OutputTokenTimes *[]float64 `json:"output_token_times,omitempty"`
	}
	ipUsage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details,omitempty"`
	}
	ipErrorRecord struct {
		ErrorType string `json:"error_type"`
		ErrorMsg  string `json:"error_msg"`
	}
)

// perRequest is per_request_lifecycle_metrics.json: each request's times,
// its answer (glassbox keeps no request body), and inference-perf's info
// and error records.
func (x *ipContext) perRequest(recs []*ipRecord) ipRecords {
	out := make(ipRecords, 0, len(recs))
	for _, q := range recs {
		o := q.o
		var r ipRequestRecord
		r.StartTime, r.EndTime, r.Response = q.start, q.end, o.GeneratedText
		r.Info.RequestMetrics.Text.InputTokens, r.Info.InputTokens = q.inputTokens, q.inputTokens
		rm := &r.Info.ResponseMetrics
		rm.OutputTokens = q.outTokens
		if o.Success {
			rm.ServerUsage = &ipUsage{PromptTokens: o.PromptLen, CompletionTokens: o.OutputTokens, TotalTokens: o.PromptLen + o.OutputTokens}
			if o.CachedTokens != nil {
				rm.ServerUsage.PromptTokensDetails = &struct {
					CachedTokens int `json:"cached_tokens"`
				}{*o.CachedTokens}
			}
		}
		if !o.Unary {
			tt := q.tokenTimes
			if tt == nil {
				tt = []float64{}
			}
			chunks := []string{}
			rm.ResponseChunks, rm.ChunkTimes, rm.OutputTokenTimes = &chunks, &tt, &tt
		}
		if o.Model != "" {
			m := o.Model
			r.Info.LoRAAdapter = &m
		}
		if !o.Success {
			typ := o.ErrorType
			if typ == "" {
				typ = "ClientError"
			}
			r.Error = &ipErrorRecord{ErrorType: typ, ErrorMsg: cmpOr(o.ErrorBody, o.Error)}
			r.Response = o.ErrorBody
		}
		out = append(out, r)
	}
	return out
}

// ipRecords writes itself one record at a time.
type ipRecords []ipRequestRecord

func (rs ipRecords) writeTo(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString("[")
	for i := range rs {
		if i > 0 {
			bw.WriteString(",")
		}
		b, err := json.MarshalIndent(&rs[i], "  ", "  ")
		if err != nil {
			return err
		}
		bw.WriteString("\n  ")
		bw.Write(b)
	}
	bw.WriteString("\n]")
	return bw.Flush()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// prometheusSummary is inference-perf's Prometheus report from the
// server's /metrics read over [from, to] (the whole pass when nil): the
// counters' increase and rate, the histograms' mean, median, p90 and p99
// from their buckets' increase, the gauges over the readings. nil without
// two readings in the window.
func prometheusSummary(v *ServerView, from, to *time.Time) object {
	var snaps []*snapshot
	for _, s := range v.snaps {
		if (from == nil || !s.at.Before(*from)) && (to == nil || !s.at.After(*to)) {
			snaps = append(snaps, s)
		}
	}
	if from != nil {
		// The window's opening reading is the last one before it.
		var before *snapshot
		for _, s := range v.snaps {
			if s.at.Before(*from) {
				before = s
			}
		}
		if before != nil {
			snaps = append([]*snapshot{before}, snaps...)
		}
	}
	if len(snaps) < 2 {
		return nil
	}
	first, last := snaps[0], snaps[len(snaps)-1]
	secs := last.at.Sub(first.at).Seconds()
	inc := func(name string) float64 { return last.value(name) - first.value(name) }
	rate := func(name string) float64 {
		if secs <= 0 {
			return 0
		}
		return inc(name) / secs
	}
	hist := func(name string) object {
		h := histDelta(first, last, name, []float64{50, 90, 99})
		q := func(i int) float64 {
			if i < len(h.Percentiles) {
				return h.Percentiles[i].Value / 1000
			}
			return 0
		}
		return object{{"mean", h.Mean / 1000}, {"median", q(0)}, {"p90", q(1)}, {"p99", q(2)}}
	}
	gauge := func(name string) object {
		var xs []float64
		for _, s := range snaps {
			xs = append(xs, s.value(name))
		}
		slices.Sort(xs)
		return object{{"mean", mean(xs)}, {"median", percentile(xs, 50)}, {"p90", percentile(xs, 90)}, {"p99", percentile(xs, 99)}}
	}
	ratio := func(num, den string) float64 {
		if d := inc(den); d > 0 {
			return inc(num) / d * 100
		}
		return 0
	}
	const v0 = "vllm:"
	return object{
		{"benchmark_time_seconds", 0.0}, {"load_summary", object{}},
		{"successes", object{
			{"count", inc(v0 + "request_success_total")}, {"rate", rate(v0 + "request_success_total")},
			{"prompt_len", object{{"mean", rate(v0 + "prompt_tokens_total")}, {"rate", rate(v0 + "prompt_tokens_total")}}},
			{"output_len", object{{"mean", rate(v0 + "generation_tokens_total")}, {"rate", rate(v0 + "generation_tokens_total")}}},
			{"queue_len", object{{"mean", gauge(v0 + "num_requests_waiting")[0].v}}},
			{"request_latency", hist(v0 + "e2e_request_latency_seconds")},
			{"time_to_first_token", hist(v0 + "time_to_first_token_seconds")},
			{"time_per_output_token", hist(v0 + "request_time_per_output_token_seconds")},
			{"kv_cache_usage_percentage", gauge(v0 + "kv_cache_usage_perc")},
			{"num_requests_swapped", object{{"mean", 0.0}}},
			{"num_preemptions_total", object{{"mean", inc(v0 + "num_preemptions_total")}}},
			{"prefix_cache_hit_percent", object{{"mean", ratio(v0+"prefix_cache_hits_total", v0+"prefix_cache_queries_total")}}},
			{"inter_token_latency", hist(v0 + "inter_token_latency_seconds")},
			{"num_requests_running", object{{"mean", gauge(v0 + "num_requests_running")[0].v}}},
			{"request_queue_time", hist(v0 + "request_queue_time_seconds")},
			{"request_inference_time", hist(v0 + "request_inference_time_seconds")},
			{"request_prefill_time", hist(v0 + "request_prefill_time_seconds")},
			{"request_decode_time", hist(v0 + "request_decode_time_seconds")},
			{"request_prompt_tokens", hist(v0 + "request_prompt_tokens")},
			{"request_generation_tokens", hist(v0 + "request_generation_tokens")},
			{"request_max_num_generation_tokens", hist(v0 + "request_max_num_generation_tokens")},
			{"request_params_n", hist(v0 + "request_params_n")},
			{"request_params_max_tokens", hist(v0 + "request_params_max_tokens")},
			{"request_success_count", inc(v0 + "request_success_total")},
			{"iteration_tokens", hist(v0 + "iteration_tokens_total")},
			{"prompt_tokens_cached", inc(v0 + "prompt_tokens_cached_total")},
			{"external_prefix_cache_hit_percent", object{{"mean", ratio(v0+"external_prefix_cache_hits_total", v0+"external_prefix_cache_queries_total")}}},
			{"mm_cache_hit_percent", object{{"mean", ratio(v0+"mm_cache_hits_total", v0+"mm_cache_queries_total")}}},
			{"corrupted_requests", inc(v0 + "corrupted_requests_total")},
			{"request_prefill_kv_computed_tokens", hist(v0 + "request_prefill_kv_computed_tokens")},
			{"kv_block_idle_before_evict", hist(v0 + "kv_block_idle_before_evict_seconds")},
			{"kv_block_lifetime", hist(v0 + "kv_block_lifetime_seconds")},
			{"kv_block_reuse_gap", hist(v0 + "kv_block_reuse_gap_seconds")},
		}},
		{"failures", object{}},
	}
}
