package simulate

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/inferenceperf"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

func server() replica.Config {
	return replica.Config{Sim: sim.Config{Hardware: "h100", Model: "llama-3.1-8b"}, MaxNumSeqs: 128, MaxNumBatchedTokens: 2048,
		MaxModelLen: 4096, BlockSize: 16, MaxQueuedRequests: 10000, GPUMemoryUtilization: 0.9}
}

func ids(n, from int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 300 + (from+i)%1000
	}
	return out
}

// onePlan sends the samples at the offsets, one stage.
func onePlan(offsets []time.Duration, samples ...workload.Sample) *workload.Plan {
	return &workload.Plan{Prompts: samples, Stages: []workload.Stage{{Offsets: offsets, Duration: offsets[len(offsets)-1]}}}
}

// TestOneRequestTimeline: a request alone on the GPU is answered after the
// frontend's arrival, its prefill step and its decode steps, each token
// reaching the client the frontend's lag and per-token time later: the
// latencies a client sees are the cost model's steps plus the frontend.
func TestOneRequestTimeline(t *testing.T) {
	s := workload.Sample{PromptIDs: ids(100, 0), PromptLen: 100, OutputLen: 10}
	res, err := Run(context.Background(), Config{Replica: server(), Plan: onePlan([]time.Duration{time.Second}, s)})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	if !o.Success || o.OutputTokens != 10 || len(o.ITL) != 9 || o.PromptLen != 100 {
		t.Fatalf("output %+v", o)
	}
	hw, _ := profiles.LookupHardware("h100")
	m, _ := profiles.LookupModel("llama-3.1-8b")
	cm := costmodel.Model{HW: hw, Model: m, TP: 1}
	prefill := cm.Step([]costmodel.Seq{{Tokens: len(s.PromptIDs), NumPrompt: 100, Sample: true}})
	fe := hw.Calib.Frontend
	step := prefill.Duration + prefill.Host
	want := fe.Arrival + step + time.Duration(fe.LagSteps*float64(step)) + fe.Stream + fe.PerToken
	if d := o.TTFT - want; d.Abs() > time.Microsecond {
		t.Errorf("TTFT %v, want arrival %v + prefill %v × (1 + lag %.2f) + the API server's %v + per-token %v = %v", o.TTFT, fe.Arrival, step, fe.LagSteps, fe.Stream, fe.PerToken, want)
	}
	decode := cm.Step([]costmodel.Seq{{Tokens: 1, Pos: 105, NumPrompt: 100, Sample: true}})
	for i, g := range o.ITL[1:] {
		if rel := math.Abs(float64(g-decode.Duration-fe.PerToken)) / float64(decode.Duration); rel > 0.001 {
			t.Errorf("gap %d: %v, want a decode step %v + %v", i+2, g, decode.Duration, fe.PerToken)
		}
	}
	var sum time.Duration
	for _, g := range o.ITL {
		sum += g
	}
	if o.Latency != o.TTFT+sum+fe.Finish {
		t.Errorf("latency %v, want TTFT + gaps + finish = %v", o.Latency, o.TTFT+sum+fe.Finish)
	}
	if !o.Start.Equal(Epoch.Add(time.Second)) || res.Duration != time.Second+o.Latency {
		t.Errorf("sent at %v, run %v", o.Start, res.Duration)
	}
}

// TestDueMidStepIsSentThen: a request due while the engine is in a step
// is sent at its due time and waits for the step to end in the engine,
// as a real client's request does: its TTFT counts the wait, and none of
// it is client-side queue time. The fleet polls the schedule at step
// boundaries; before, the request went at the boundary and the wait was
// lost from its TTFT.
func TestDueMidStepIsSentThen(t *testing.T) {
	long := workload.Sample{PromptIDs: ids(2000, 0), PromptLen: 2000, OutputLen: 50}
	short := workload.Sample{PromptIDs: ids(20, 5000), PromptLen: 20, OutputLen: 2}
	hw, _ := profiles.LookupHardware("h100")
	m, _ := profiles.LookupModel("llama-3.1-8b")
	cm := costmodel.Model{HW: hw, Model: m, TP: 1}
	prefill := cm.Step([]costmodel.Seq{{Tokens: 2000, NumPrompt: 2000, Sample: true}})
	step := prefill.Duration + prefill.Host
	// Due halfway through the long prompt's prefill step.
	mid := time.Second + hw.Calib.Frontend.Arrival + step/2
	plan := onePlan([]time.Duration{time.Second, mid}, long, short)
	res, err := Run(context.Background(), Config{Replica: server(), Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[1]
	if !o.Success {
		t.Fatalf("output %+v", o)
	}
	if !o.Start.Equal(Epoch.Add(mid)) || o.QueueTime != 0 {
		t.Errorf("sent at %v (queue time %v), want its due time %v", o.Start.Sub(Epoch), o.QueueTime, mid)
	}
	if o.TTFT < step/2 {
		t.Errorf("TTFT %v: less than the half step (%v) it waited for in the engine", o.TTFT, step/2)
	}
}

// TestSessionsWaitForTheirAnswer: a user's next round is sent only when
// its answer is in, carrying the conversation (so it is prefix-cached);
// the server's counters agree with the client's.
func TestSessionsWaitForTheirAnswer(t *testing.T) {
	p := onePlan([]time.Duration{0, 0, 0, 0}, workload.Sample{PromptIDs: ids(50, 0), PromptLen: 50, OutputLen: 20},
		workload.Sample{PromptIDs: ids(60, 7), PromptLen: 60, OutputLen: 5})
	p.Sessions = true
	res, err := Run(context.Background(), Config{Replica: server(), Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	for u := range 2 {
		first, second := res.Outputs[u], res.Outputs[u+2]
		if !first.Success || !second.Success {
			t.Fatalf("user %d: %+v, %+v", u, first, second)
		}
		if second.Start.Before(first.Start.Add(first.Latency)) {
			t.Errorf("user %d's second round went at %v, before its first was answered at %v", u, second.Start, first.Start.Add(first.Latency))
		}
		if want := first.PromptLen + first.OutputTokens + p.Prompts[u].PromptLen; second.PromptLen != want {
			t.Errorf("user %d's second prompt has %d tokens, want the first %d + its answer %d + the question %d",
				u, second.PromptLen, first.PromptLen, first.OutputTokens, p.Prompts[u].PromptLen)
		}
		if second.QueueTime <= 0 {
			t.Errorf("user %d's second round waited %v on the client", u, second.QueueTime)
		}
	}
	sc := gather(t, res)
	if got, _ := sc.Sum("vllm:request_success_total", nil); got != 4 {
		t.Errorf("server counted %v successes, want 4", got)
	}
	if got, _ := sc.Sum("vllm:prefix_cache_hits_total", nil); got < 2*48 {
		t.Errorf("prefix cache hits %v: the second rounds should reuse the first rounds' prompts", got)
	}
}

func gather(t *testing.T, res *Result) *promtext.Scrape {
	t.Helper()
	var buf bytes.Buffer
	mfs, err := res.Gatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := promtext.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestTooLongPromptFails: a request the server would reject with 400 fails
// at once, and the run goes on.
func TestTooLongPromptFails(t *testing.T) {
	res, err := Run(context.Background(), Config{Replica: server(), Plan: onePlan([]time.Duration{0, time.Second},
		workload.Sample{PromptIDs: ids(4000, 0), PromptLen: 4000, OutputLen: 200},
		workload.Sample{PromptIDs: ids(10, 0), PromptLen: 10, OutputLen: 2})})
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Outputs[0]; o.Success || !strings.Contains(o.Error, "exceed") {
		t.Errorf("too long a prompt: %+v", o)
	}
	if !res.Outputs[1].Success {
		t.Errorf("the next request: %+v", res.Outputs[1])
	}
}

// TestSeriesLoadsIntoPrometheus: the run's /metrics over virtual time is
// OpenMetrics that promtool turns into TSDB blocks, with the counters'
// last points equal to the run's totals.
func TestSeriesLoadsIntoPrometheus(t *testing.T) {
	promtool := reftest.Tool(t, "promtool")
	var offs []time.Duration
	for i := range 40 {
		offs = append(offs, time.Duration(i)*250*time.Millisecond)
	}
	p := onePlan(offs, workload.Sample{PromptIDs: ids(200, 0), PromptLen: 200, OutputLen: 50})
	series := NewSeries(time.Second)
	res, err := Run(context.Background(), Config{Replica: server(), Plan: p, Series: series})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "metrics.om")
	var buf bytes.Buffer
	if err := series.WriteOpenMetrics(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", file, filepath.Join(dir, "data")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool create-blocks-from openmetrics: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(dir, "data", "wal"), 0o755); err != nil { // dump opens the DB, which wants one
		t.Fatal(err)
	}
	dump, err := exec.Command(promtool, "tsdb", "dump", "--match", `vllm:request_success_total`, filepath.Join(dir, "data")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool tsdb dump: %v\n%s", err, dump)
	}
	// Lines read {labels} value timestamp: the last reading counts all 40.
	found := false
	for _, l := range strings.Split(string(dump), "\n") {
		f := strings.Fields(l)
		if strings.Contains(l, `finished_reason="length"`) && len(f) >= 3 && f[len(f)-2] == "40" {
			found = true
		}
	}
	if !found {
		t.Errorf("no point of 40 finished requests in the blocks:\n%s", dump)
	}
	// The simulated GPU's dcgm-exporter is in the blocks too, labelled as
	// its scrape would be, so the doctor joins it to the engine by instance.
	gpu, err := exec.Command(promtool, "tsdb", "dump", "--match", `DCGM_FI_PROF_GR_ENGINE_ACTIVE`, filepath.Join(dir, "data")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool tsdb dump: %v\n%s", err, gpu)
	}
	busy := false
	for _, l := range strings.Split(string(gpu), "\n") {
		f := strings.Fields(l)
		if strings.Contains(l, `instance="simulated:8000"`) && strings.Contains(l, `job="dcgm"`) && len(f) >= 3 && f[len(f)-2] != "0" {
			busy = true
		}
	}
	if !busy {
		t.Errorf("no busy DCGM reading labelled job=dcgm, instance=simulated:8000 in the blocks:\n%.2000s", gpu)
	}
	if !strings.Contains(string(dump), `job="glassbox"`) {
		t.Errorf("the engine's series lack job=\"glassbox\":\n%.500s", dump)
	}
	if n := series.Samples(); n < 100 {
		t.Errorf("%d points recorded over a %v run", n, res.Duration)
	}
}

// TestRequestTimeoutAborts: a client whose limit is shorter than its answer
// gives up at its timeout, and the engine aborts the request and frees its
// blocks, as the API server does when a client disconnects.
func TestRequestTimeoutAborts(t *testing.T) {
	var offs []time.Duration
	for i := range 20 {
		offs = append(offs, time.Duration(i)*100*time.Millisecond)
	}
	long := workload.Sample{PromptIDs: ids(100, 0), PromptLen: 100, OutputLen: 2000} // ~10 ms a token: 20 s
	res, err := Run(context.Background(), Config{Replica: server(), Plan: onePlan(offs, long), RequestTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range res.Outputs {
		if o.Success || o.Error != "request timeout" || o.Latency != 3*time.Second {
			t.Errorf("request %d: success %v, error %q, latency %v; want a timeout at 3s", i, o.Success, o.Error, o.Latency)
		}
	}
	sc := gatherText(t, res.Gatherer)
	if v, _ := sc.Sum("vllm:request_success_total", promtext.Labels{"finished_reason": "abort"}); v != 20 {
		t.Errorf("%v aborts counted, want 20", v)
	}
	if v, _ := sc.Sum("vllm:kv_cache_usage_perc", nil); v != 0 {
		t.Errorf("KV usage %v after the aborts, want 0", v)
	}
	if res.Duration > 5*time.Second { // the last was sent at 1.9 s
		t.Errorf("the run lasted %v: the given-up requests kept running", res.Duration)
	}
}

func gatherText(t *testing.T, g prometheus.Gatherer) *promtext.Scrape {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := promtext.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// BenchmarkSimulateExp16 is the speed of virtual time: reference table A's
// exp 16 workload (16,800 requests over 20 minutes, as inference-perf
// e8e0aa99 ran it) on a simulated H100.
func BenchmarkSimulateExp16(b *testing.B) {
	c, err := inferenceperf.Parse(strings.NewReader(exp16))
	if err != nil {
		b.Fatal(err)
	}
	plan, err := inferenceperf.NewPlan(context.Background(), c, Tokenizer(), inferenceperf.PlanOptions{Compat: inferenceperf.Legacy, Drift: [2]int{26, 48}})
	if err != nil {
		b.Fatal(err)
	}
	var virt, wall time.Duration
	for b.Loop() {
		res, err := Run(context.Background(), Config{Replica: server(), Plan: plan})
		if err != nil {
			b.Fatal(err)
		}
		virt += res.Duration
		wall += res.Wall
	}
	b.ReportMetric(float64(plan.NumRequests()*b.N)/wall.Seconds(), "requests/s")
	b.ReportMetric(virt.Seconds()/wall.Seconds(), "x-real-time")
}

const exp16 = `
load:
  type: constant
  stages:
  - {rate: 8.0, duration: 600}
  - {rate: 20.0, duration: 600}
api: {type: completion, streaming: true}
server: {type: vllm, ignore_eos: true}
data:
  type: shared_prefix
  shared_prefix:
    num_unique_system_prompts: 9
    num_users_per_system_prompt: 5
    system_prompt_len: 100
    question_len: 447
    output_len: 248
    enable_multi_turn_chat: true
`

// TestObserveSeesWhatMetricsServes: the run's readings are the replica's
// /metrics as configured, the families older vLLM releases had included
// and glassbox's own left out, not the raw registry.
func TestObserveSeesWhatMetricsServes(t *testing.T) {
	rc := server()
	rc.ShowHiddenMetricsForVersion, rc.DisableGlassboxMetrics = "0.10", true
	var names map[string]bool
	_, err := Run(context.Background(), Config{Replica: rc, ObserveInterval: time.Second,
		Plan: onePlan([]time.Duration{0, time.Second}, workload.Sample{PromptIDs: ids(50, 0), PromptLen: 50, OutputLen: 5}),
		Observe: func(_ time.Time, in Instance) {
			mfs, err := in.Gatherer.Gather()
			if err != nil {
				t.Error(err)
			}
			names = map[string]bool{}
			for _, mf := range mfs {
				names[mf.GetName()] = true
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !names["vllm:gpu_cache_usage_perc"] || !names["vllm:time_per_output_token_seconds"] || names["glassbox_executor_busy_seconds_total"] {
		t.Errorf("observed families: hidden ones %v %v, glassbox's %v; want the hidden ones and not glassbox's",
			names["vllm:gpu_cache_usage_perc"], names["vllm:time_per_output_token_seconds"], names["glassbox_executor_busy_seconds_total"])
	}
}

// TestTokenizerIsAsWideAsAModel: ids above the simulator's words round-trip
// through text, so vLLM's random dataset draws from a real model's range
// and a few thousand random prompts do not start alike.
func TestTokenizerIsAsWideAsAModel(t *testing.T) {
	tk := Tokenizer()
	ctx := context.Background()
	if tk.VocabSize() != WideVocab {
		t.Fatalf("vocab %d, want %d", tk.VocabSize(), WideVocab)
	}
	ids := []int{300, 5000, 127000, 301, WideVocab - 1}
	text, err := tk.Decode(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	back, err := tk.Encode(ctx, text)
	if err != nil || !slices.Equal(back, ids) {
		t.Fatalf("round trip %v → %q → %v (%v)", ids, text, back, err)
	}
	samples, err := workload.LoadSamples(ctx, workload.DatasetConfig{Name: "random", RandomInputLen: 64, RandomOutputLen: 8}, 4000, tk, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	starts := map[int]int{}
	for _, s := range samples {
		starts[s.PromptIDs[0]]++
	}
	if dup := len(samples) - len(starts); dup > 200 {
		t.Errorf("%d of %d random prompts start like another: the prefix cache would serve them as no real workload's", dup, len(samples))
	}
}

// TestForcedToolCall: a request that forces a tool call (a replayed
// trace's) writes the call its tools' schema allows and stops there, as
// glassbox serve does, rather than its recorded length; beside a
// response_format it is refused, as serve refuses it.
func TestForcedToolCall(t *testing.T) {
	tools := &workload.ToolUse{Choice: "required", MaxTokens: 2048, Tools: []any{map[string]any{"type": "function", "function": map[string]any{
		"name": "get_weather", "parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}}}}
	s := workload.Sample{PromptIDs: ids(50, 0), PromptLen: 50, OutputLen: 3, Tools: tools}
	res, err := Run(context.Background(), Config{Replica: server(), Plan: onePlan([]time.Duration{0}, s)})
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Outputs[0]; !o.Success || o.OutputTokens <= 3 || o.OutputTokens >= 2048 {
		t.Errorf("the tool call (%s): success %v, %d tokens; want the call's JSON, more than the recorded 3 and ended by its grammar", o.Error, o.Success, o.OutputTokens)
	}
	p := onePlan([]time.Duration{0}, s)
	p.ResponseFormat = map[string]any{"type": "json_object"}
	res, err = Run(context.Background(), Config{Replica: server(), Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Outputs[0]; o.Success || o.ErrorType != "HTTP Error 400" || !strings.Contains(o.Error, "response_format") {
		t.Errorf("a forced tool call beside a response_format: %+v, want a 400 naming response_format", o)
	}
}
