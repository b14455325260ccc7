package doctor

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// ReplicaConfig is a simulated replica's configuration, read from the
// target's info series and changed by the recommendations.
type ReplicaConfig struct {
	Hardware, Model     string
	TensorParallel      int
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	MaxModelLen         int
	BlockSize           int
	NumBlocks           int // KV-cache blocks; the starter turns them into --kv-cache-memory-bytes
	PrefixCaching       bool
	HostOverhead        time.Duration // the simulator's per-step host time (--sim-host-overhead)
	AsyncScheduling     bool
	// Quantization and KVCacheDtype are vLLM's --quantization and
	// --kv-cache-dtype ("" and "auto" for the model's own type): an FP8
	// target is replayed in FP8, its KV blocks one byte an element.
	Quantization, KVCacheDtype string
	ExpertParallel             bool // --enable-expert-parallel
	// DataParallel is --data-parallel-size: the ranks behind one API, each
	// with MaxNumSeqs, MaxNumBatchedTokens and NumBlocks of its own.
	DataParallel int
	// OffloadGiB is --kv-offloading-size: the CPU offload tier's host
	// memory, 0 without one.
	OffloadGiB float64
	// Replicas is how many replicas share the load; the replay runs one of
	// them at its share of the arrival rate (a router that balances
	// evenly). 0 and 1 are one.
	Replicas int
}

// Replay runs load against a simulated replica configured as rc and
// returns the serve flags that configure it and what its clients saw.
// cmd/glassbox provides it (glassbox simulate's engine in virtual time,
// and bench's summary of the outputs), since the doctor may reach neither
// the engine nor a load generator.
type Replay func(ctx context.Context, rc ReplicaConfig, load ReplayLoad) (flags []string, seen ReplayOutcome, err error)

// ReplayOutcome is what one replayed replica's clients saw.
type ReplayOutcome struct {
	Completed, Failed int
	OutputThroughput  float64 // tokens/s
	RequestThroughput float64
	MeanTTFTms        float64
	MeanITLms         float64
	MeanE2ELms        float64 // over completed requests
	// CensoredE2ELms counts every failed request at the run's length (a
	// lower bound of its latency), so that a configuration does not look
	// faster by completing only its quickest requests.
	CensoredE2ELms float64
}

// VerifyConfig says how to replay.
type VerifyConfig struct {
	Replay Replay
	// Send is how long the replay sends the observed load, in virtual
	// time; default two minutes.
	Send time.Duration
	// Seed draws the replayed prompts and arrivals; both replicas get the
	// same draw, so the comparison is of the flags alone.
	Seed uint64
}

// Verification is the outcome of replaying the observed load.
type Verification struct {
	Skipped     string     `json:"skipped,omitempty"` // why nothing was replayed
	Load        ReplayLoad `json:"load"`
	Current     *ReplayRun `json:"current,omitempty"`
	Recommended *ReplayRun `json:"recommended,omitempty"`
	Improved    bool       `json:"improved"`
	Verdict     string     `json:"verdict"`
	Findings    []string   `json:"applied_findings,omitempty"`
	// Untested are recommendations the replay leaves out, and why.
	Untested []string `json:"untested,omitempty"`
}

// ReplayLoad is the load estimated from the window's counters.
type ReplayLoad struct {
	RequestRate  float64 `json:"request_rate"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	SendSeconds  float64 `json:"send_seconds"`
	Seed         uint64  `json:"seed"` // of the prompts and arrivals, the same for both replays
}

// ReplayRun is one replica's replay.
type ReplayRun struct {
	Flags []string `json:"flags"`
	// Replicas is how many replicas shared the load (one was replayed, at
	// its share); throughputs are the fleet's.
	Replicas          int `json:"replicas"`
	Completed, Failed int
	OutputThroughput  float64 `json:"output_throughput"` // tokens/s
	RequestThroughput float64 `json:"request_throughput"`
	MeanTTFTms        float64 `json:"mean_ttft_ms"`
	MeanITLms         float64 `json:"mean_itl_ms"`
	MeanE2ELms        float64 `json:"mean_e2el_ms"` // over completed requests
	// CensoredE2ELms counts every failed request at the run's length (a
	// lower bound of its latency), so that a configuration does not look
	// faster by completing only its quickest requests.
	CensoredE2ELms float64 `json:"censored_mean_e2el_ms"`
	Error          string  `json:"error,omitempty"`
}

// Verify replays the load of rep's window against its current
// configuration and the one rep's findings recommend, and judges the
// recommendation by rep's thresholds.
func Verify(ctx context.Context, cfg VerifyConfig, rep *Report) *Verification {
	v := &Verification{}
	s, findings := rep.signals, rep.Findings
	if s == nil {
		v.Skipped = "a fleet's report has no one replica to replay"
		return v
	}
	cur, err := currentReplica(s)
	if err != nil {
		v.Skipped = err.Error()
		return v
	}
	rec := cur
	itl := false
	for _, f := range findings {
		if f.untested != "" {
			v.Untested = append(v.Untested, f.Name+": "+f.untested)
		}
		if f.apply != nil {
			f.apply(&rec)
			v.Findings = append(v.Findings, f.Name)
			itl = itl || f.itl
		}
	}
	if rec == cur {
		v.Skipped = "no finding recommends a flag change that one replica can test"
		if len(v.Untested) > 0 {
			v.Skipped += " (" + strings.Join(v.Untested, "; ") + ")"
		}
		return v
	}
	if cfg.Send <= 0 {
		cfg.Send = 2 * time.Minute
	}
	v.Load = estimateLoad(s, cfg.Send)
	v.Load.Seed = cfg.Seed
	if v.Load.RequestRate <= 0 || v.Load.InputTokens <= 0 || v.Load.OutputTokens <= 0 {
		v.Skipped = "the window finished no requests, so there is no load to replay"
		return v
	}
	v.Current = replay(ctx, cfg, cur, v.Load)
	v.Recommended = replay(ctx, cfg, rec, v.Load)
	v.judge(itl, s.th)
	return v
}

// currentReplica reads the target's configuration from its info series.
func currentReplica(s *Signals) (ReplicaConfig, error) {
	c := s.cfg
	switch exec := s.w.Info[metricspec.ExecutorInfo]["executor"]; exec {
	case "sim":
	case "":
		gpu := "hardware it does not name"
		if _, _, _, name := peaks(s.w, s.hints, c.hardware); name != "" {
			gpu = "a " + name
		}
		return ReplicaConfig{}, fmt.Errorf("verify replays on glassbox's simulated GPU, which it can configure only from glassbox's own series; this vLLM target runs on %s, and a replay would be as faithful as that profile at best: glassbox simulate --sim-hardware with the target's vllm serve flags runs the experiment instead", gpu)
	default:
		return ReplicaConfig{}, fmt.Errorf("verify replays on the simulated executor; the target's executor is %q", exec)
	}
	if c.maxNumSeqs == 0 || c.numBlocks == 0 || c.blockSize == 0 || c.maxBatchedTokens == 0 || c.prefixCaching == nil {
		return ReplicaConfig{}, fmt.Errorf("verify needs glassbox_scheduler_config_info and vllm:cache_config_info")
	}
	return ReplicaConfig{Hardware: c.hardware, Model: c.model, TensorParallel: max(1, c.tensorParallel),
		MaxNumSeqs: c.maxNumSeqs, MaxNumBatchedTokens: c.maxBatchedTokens, MaxModelLen: c.maxModelLen,
		BlockSize: c.blockSize, NumBlocks: c.numBlocks, PrefixCaching: *c.prefixCaching,
		HostOverhead: c.hostDuration(), AsyncScheduling: c.asyncScheduling, Quantization: c.quantization, KVCacheDtype: c.cacheDtype, ExpertParallel: c.expertParallel, DataParallel: c.engines, OffloadGiB: c.offloadGiB, Replicas: 1}, nil
}

// estimateLoad takes the arrival rate and mean lengths from the counters.
func estimateLoad(s *Signals, send time.Duration) ReplayLoad {
	rate := s.v(SigArrivalRate)
	if !(rate > 0) {
		rate = s.v(SigFinishRate)
	}
	in, out := int(math.Round(zeroNaN(s.v(SigPromptMean)))), int(math.Round(zeroNaN(s.v(SigGenMean))))
	if lim := s.cfg.maxModelLen; lim > 0 && in+out > lim {
		in = max(1, lim-out) // a mean over a window can exceed what one request may hold
	}
	return ReplayLoad{RequestRate: zeroNaN(rate), InputTokens: in, OutputTokens: out, SendSeconds: send.Seconds()}
}

func replay(ctx context.Context, cfg VerifyConfig, rc ReplicaConfig, load ReplayLoad) *ReplayRun {
	run := &ReplayRun{}
	flags, o, err := cfg.Replay(ctx, rc, load)
	run.Flags = flags
	if err != nil {
		run.Error = err.Error()
		return run
	}
	// With replicas the replay ran one of them at its share of the load:
	// the fleet's throughput is theirs together.
	n := float64(max(rc.Replicas, 1))
	run.Replicas = max(rc.Replicas, 1)
	run.Completed, run.Failed = o.Completed, o.Failed
	run.OutputThroughput, run.RequestThroughput = n*o.OutputThroughput, n*o.RequestThroughput
	run.MeanTTFTms, run.MeanITLms, run.MeanE2ELms, run.CensoredE2ELms = o.MeanTTFTms, o.MeanITLms, o.MeanE2ELms, o.CensoredE2ELms
	return run
}

// judge: better throughput (by ReplayThroughputGain, 5 %) or latency (a
// censored mean end-to-end lower by ReplayLatencyGain, 10 %), and neither
// worse by more than ReplayTolerance (5 %); or, for a change that trades
// throughput for inter-token latency (itl), mean ITL lower by
// ReplayITLGain (10 %).
func (v *Verification) judge(itl bool, th Thresholds) {
	c, r := v.Current, v.Recommended
	if c.Error != "" || r.Error != "" {
		v.Verdict = "a replay failed: " + strings.TrimSpace(c.Error+" "+r.Error)
		return
	}
	tput := r.OutputThroughput / math.Max(c.OutputThroughput, 1e-9)
	lat := c.CensoredE2ELms / math.Max(r.CensoredE2ELms, 1e-9)
	itlGain := c.MeanITLms / math.Max(r.MeanITLms, 1e-9)
	v.Improved = (tput >= th.ReplayThroughputGain || lat >= th.ReplayLatencyGain) && tput >= 1-th.ReplayTolerance && lat >= 1/(1+th.ReplayTolerance)
	goal := ""
	if itl {
		v.Improved = itlGain >= th.ReplayITLGain
		goal = fmt.Sprintf(", mean inter-token latency %.1f → %.1f ms (%.2f× faster; the change trades throughput for it)", c.MeanITLms, r.MeanITLms, itlGain)
	}
	word := "did not improve"
	if v.Improved {
		word = "improved"
	}
	v.Verdict = fmt.Sprintf("the recommendation %s the replay: output throughput %.0f → %.0f tokens/s (%.2f×), mean end-to-end latency (failures at the replay's length) %.0f → %.0f ms (%.2f× faster)%s",
		word, c.OutputThroughput, r.OutputThroughput, tput, c.CensoredE2ELms, r.CensoredE2ELms, lat, goal)
}

func (v *Verification) writeText(b *strings.Builder) {
	b.WriteString("\nverify: ")
	if v.Skipped != "" {
		fmt.Fprintf(b, "skipped: %s\n", v.Skipped)
		return
	}
	fmt.Fprintf(b, "replayed %.2f requests/s of %d prompt + %d output tokens for %.0fs of virtual time on two simulated replicas (applying %s)\n",
		v.Load.RequestRate, v.Load.InputTokens, v.Load.OutputTokens, v.Load.SendSeconds, join(v.Findings))
	for _, x := range []struct {
		name string
		r    *ReplayRun
	}{{"current", v.Current}, {"recommended", v.Recommended}} {
		if x.r.Error != "" {
			fmt.Fprintf(b, "  %-12s error: %s\n", x.name, x.r.Error)
			continue
		}
		fleet := ""
		if x.r.Replicas > 1 {
			fleet = fmt.Sprintf(" (× %d replicas, one replayed at 1/%d of the load)", x.r.Replicas, x.r.Replicas)
		}
		fmt.Fprintf(b, "  %-12s %4d ok %3d failed  %8.1f tok/s  TTFT %7.1f ms  ITL %6.2f ms  E2E %8.1f ms   %s%s\n", x.name,
			x.r.Completed, x.r.Failed, x.r.OutputThroughput, x.r.MeanTTFTms, x.r.MeanITLms, x.r.MeanE2ELms, strings.Join(x.r.Flags, " "), fleet)
	}
	fmt.Fprintf(b, "  %s\n", v.Verdict)
	for _, u := range v.Untested {
		fmt.Fprintf(b, "  not replayed: %s\n", u)
	}
}
