package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/simulate"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// replayVirtual runs the load on a simulated replica in virtual time,
// configured by the serve flags of rc (parsed as serve parses them), and
// summarises what its clients saw as bench does.
func replayVirtual(ctx context.Context, rc doctor.ReplicaConfig, load doctor.ReplayLoad) ([]string, doctor.ReplayOutcome, error) {
	flags, err := replicaFlags(rc)
	if err != nil {
		return nil, doctor.ReplayOutcome{}, err
	}
	outs, dur, err := replayRun(ctx, flags, rc, load)
	if err != nil {
		return flags, doctor.ReplayOutcome{}, err
	}
	res, err := bench.Offline(bench.Config{PercentileMetrics: []string{"ttft", "itl", "e2el"}}, rc.Model, "", bench.Pass{Outputs: outs}, dur, nil)
	if err != nil {
		return flags, doctor.ReplayOutcome{}, err
	}
	m := res.Passes[0].Metrics
	return flags, doctor.ReplayOutcome{Completed: m.Completed, Failed: m.Failed, OutputThroughput: m.OutputThroughput, RequestThroughput: m.RequestThroughput,
		MeanTTFTms: m.Dists["ttft"].Mean, MeanITLms: m.Dists["itl"].Mean, MeanE2ELms: m.Dists["e2el"].Mean, CensoredE2ELms: censoredMean(outs, dur)}, nil
}

// censoredMean is the mean end-to-end latency with every failed request
// counted at limit (a lower bound of its latency), so that a configuration
// does not look faster by completing only its quickest requests.
func censoredMean(outs []bench.Output, limit time.Duration) float64 {
	if len(outs) == 0 {
		return 0
	}
	var sum time.Duration
	for _, o := range outs {
		if o.Success {
			sum += o.Latency
		} else {
			sum += limit
		}
	}
	return float64(sum.Milliseconds()) / float64(len(outs))
}

// replayRun sends the load to a replica configured by flags.
func replayRun(ctx context.Context, flags []string, rc doctor.ReplicaConfig, load doctor.ReplayLoad) ([]bench.Output, time.Duration, error) {
	var ef engineFlags
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ef.register(fs)
	if err := fs.Parse(flags); err != nil {
		return nil, 0, err
	}
	ef.visited(fs)
	cfg, err := ef.replicaConfig()
	if err != nil {
		return nil, 0, err
	}
	send := time.Duration(load.SendSeconds * float64(time.Second))
	// Replicas share the load evenly: one of them gets its share of the
	// rate (the same prompts, the same arrival pattern, stretched).
	rate := load.RequestRate / float64(max(rc.Replicas, 1))
	n := min(2000, int(math.Ceil(load.RequestRate*send.Seconds()))+1) // a prompt per request, so prefix-cache hits are as rare as the target's
	rng := rand.New(rand.NewPCG(load.Seed, 7))                        // the same draw for both configurations
	samples, err := workload.LoadSamples(ctx, workload.DatasetConfig{Name: "random", RandomInputLen: load.InputTokens, RandomOutputLen: load.OutputTokens},
		n, simulate.Tokenizer(), rng)
	if err != nil {
		return nil, 0, err
	}
	arr := workload.NewArrivals(n, send, rate, 1, nil, rng)
	res, err := simulate.Run(ctx, simulate.Config{Replica: cfg, Plan: workload.OpenLoop(samples, arr, 0, send)})
	if err != nil {
		return nil, 0, err
	}
	return res.Outputs, res.Duration, nil
}

// replicaFlags are the serve flags of a replica configuration, sizing
// --kv-cache-memory-bytes to its block count.
func replicaFlags(rc doctor.ReplicaConfig) ([]string, error) {
	m, err := profiles.LookupModel(rc.Model)
	if err != nil {
		return nil, fmt.Errorf("replica flags: %w", err)
	}
	if k := strings.ToLower(rc.KVCacheDtype); strings.HasPrefix(k, "fp8") {
		m.KVBytes = 1 // as the simulator prices --kv-cache-dtype fp8
	}
	kv := int64(rc.NumBlocks) * int64(rc.BlockSize) * m.KVBytesPerToken(rc.TensorParallel)
	itoa := strconv.Itoa
	flags := []string{"--sim-hardware", rc.Hardware, "--sim-model", rc.Model, "--tensor-parallel-size", itoa(rc.TensorParallel),
		"--max-num-seqs", itoa(rc.MaxNumSeqs), "--max-num-batched-tokens", itoa(rc.MaxNumBatchedTokens),
		"--max-model-len", itoa(rc.MaxModelLen), "--block-size", itoa(rc.BlockSize),
		"--kv-cache-memory-bytes", strconv.FormatInt(kv, 10)}
	if !rc.PrefixCaching {
		flags = append(flags, "--no-enable-prefix-caching")
	}
	if rc.HostOverhead > 0 {
		flags = append(flags, "--sim-host-overhead", rc.HostOverhead.String())
	}
	if rc.AsyncScheduling {
		flags = append(flags, "--async-scheduling")
	}
	if rc.Quantization != "" {
		flags = append(flags, "--quantization", rc.Quantization)
	}
	if rc.ExpertParallel {
		flags = append(flags, "--enable-expert-parallel")
	}
	if rc.DataParallel > 1 {
		flags = append(flags, "--data-parallel-size", itoa(rc.DataParallel))
	}
	if rc.OffloadGiB > 0 {
		flags = append(flags, "--kv-offloading-size", strconv.FormatFloat(rc.OffloadGiB, 'g', -1, 64))
	}
	if k := rc.KVCacheDtype; k != "" && k != "auto" {
		flags = append(flags, "--kv-cache-dtype", k)
	}
	return flags, nil
}
