package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/simulate"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// Exit statuses of 'glassbox doctor' (docs/doctor.md).
const (
	doctorExitWarning  = 1
	doctorExitCritical = 2
	doctorExitUsage    = 3 // bad flags, or the metrics could not be read
)

// exitError carries an exit status other than 1 out of run.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

// doctorFlags are doctor's command line.
type doctorFlags struct {
	cfg         doctor.Config
	end         string
	benchResult string
	json        bool
	verify      bool
	verifySend  time.Duration
}

func parseDoctorFlags(args []string, stderr io.Writer) (*doctorFlags, error) {
	f := &doctorFlags{}
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.cfg.MetricsURL, "metrics-url", "", "sample this /metrics directly, e.g. http://127.0.0.1:8000/metrics")
	fs.StringVar(&f.cfg.DCGMURL, "dcgm-url", "", "with --metrics-url: also sample the target's dcgm-exporter, e.g. http://10.0.0.5:9400/metrics")
	fs.StringVar(&f.cfg.MetricsFile, "metrics-file", "", "read one saved /metrics scrape (a snapshot of the gauges, not a window)")
	fs.StringVar(&f.cfg.Hints.GPU, "gpu", "", "the target's GPU (h100, h200, a100-80g, l40s), for MFU and bandwidth utilisation when its series do not say")
	fs.IntVar(&f.cfg.Hints.MaxNumSeqs, "max-num-seqs", 0, "the target's --max-num-seqs, when its series do not say (vLLM's do not)")
	fs.IntVar(&f.cfg.Hints.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "the target's --max-num-batched-tokens, when its series do not say")
	fs.DurationVar(&f.cfg.Duration, "duration", 60*time.Second, "with --metrics-url: how long to sample")
	fs.DurationVar(&f.cfg.Interval, "interval", 5*time.Second, "time between readings (the Prometheus query step)")
	fs.StringVar(&f.cfg.PrometheusURL, "prometheus-url", "", "read the target's series from this Prometheus, e.g. http://127.0.0.1:9090")
	fs.StringVar(&f.cfg.Selector, "selector", "", `with --prometheus-url: label matchers of the target, e.g. '{instance="10.0.0.5:8000"}'`)
	fs.DurationVar(&f.cfg.Since, "since", 30*time.Minute, "with --prometheus-url: window length, ending at --end")
	fs.StringVar(&f.end, "end", "", "with --prometheus-url: window end, RFC 3339 (default now)")
	fs.StringVar(&f.benchResult, "bench-result", "", "a glassbox bench (or vllm bench serve) result JSON: the client's view")
	fs.BoolVar(&f.json, "json", false, "write the report as JSON")
	fs.BoolVar(&f.verify, "verify", false, "replay the observed load on simulated replicas, in virtual time, with the current and the recommended flags")
	fs.DurationVar(&f.verifySend, "verify-duration", 2*time.Minute, "with --verify: virtual time each replay sends the observed load for")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("doctor takes no arguments, got %q", fs.Args())
	}
	if f.end != "" {
		t, err := time.Parse(time.RFC3339, f.end)
		if err != nil {
			return nil, fmt.Errorf("--end: %w", err)
		}
		f.cfg.End = t
	}
	if f.benchResult != "" {
		r, err := os.Open(f.benchResult)
		if err != nil {
			return nil, fmt.Errorf("--bench-result: %w", err)
		}
		defer r.Close()
		if f.cfg.Client, err = doctor.ParseBenchResult(r); err != nil {
			return nil, fmt.Errorf("--bench-result %s: %w", f.benchResult, err)
		}
	}
	if f.verify {
		f.cfg.Verify = &doctor.VerifyConfig{Replay: replayVirtual, Send: f.verifySend}
	}
	return f, nil
}

// runDoctor diagnoses a target; its error carries the exit status.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseDoctorFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if err != nil {
		return &exitError{doctorExitUsage, err}
	}
	rep, err := doctor.Run(ctx, f.cfg)
	if err != nil {
		return &exitError{doctorExitUsage, fmt.Errorf("doctor: %w", err)}
	}
	if f.json {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		return &exitError{doctorExitUsage, err}
	}
	if code := rep.ExitCode(); code != 0 {
		return &exitError{code, fmt.Errorf("doctor: the worst finding is %s", rep.Worst())}
	}
	return nil
}

// replayVirtual runs the load on a simulated replica in virtual time,
// configured by the serve flags of rc (parsed as serve parses them).
func replayVirtual(ctx context.Context, rc doctor.ReplicaConfig, load doctor.ReplayLoad) ([]string, []bench.Output, time.Duration, error) {
	flags, err := replicaFlags(rc)
	if err != nil {
		return nil, nil, 0, err
	}
	var ef engineFlags
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ef.register(fs)
	if err := fs.Parse(flags); err != nil {
		return flags, nil, 0, err
	}
	ef.visited(fs)
	cfg, err := ef.replicaConfig()
	if err != nil {
		return flags, nil, 0, err
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
		return flags, nil, 0, err
	}
	arr := workload.NewArrivals(n, send, rate, 1, nil, rng)
	res, err := simulate.Run(ctx, simulate.Config{Replica: cfg, Plan: workload.OpenLoop(samples, arr, 0, send)})
	if err != nil {
		return flags, nil, 0, err
	}
	return flags, res.Outputs, res.Duration, nil
}

// replicaFlags are the serve flags of a replica configuration, sizing
// --kv-cache-memory-bytes to its block count.
func replicaFlags(rc doctor.ReplicaConfig) ([]string, error) {
	m, err := profiles.LookupModel(rc.Model)
	if err != nil {
		return nil, fmt.Errorf("replica flags: %w", err)
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
	return flags, nil
}
