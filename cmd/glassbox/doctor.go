package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
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
	cfg          doctor.Config
	end          string
	benchResult  string
	json         bool
	verify       bool
	verifyBudget time.Duration
	verifyScale  float64
}

func parseDoctorFlags(args []string, stderr io.Writer) (*doctorFlags, error) {
	f := &doctorFlags{}
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.cfg.MetricsURL, "metrics-url", "", "sample this /metrics directly, e.g. http://127.0.0.1:8000/metrics")
	fs.DurationVar(&f.cfg.Duration, "duration", 60*time.Second, "with --metrics-url: how long to sample")
	fs.DurationVar(&f.cfg.Interval, "interval", 5*time.Second, "time between readings (the Prometheus query step)")
	fs.StringVar(&f.cfg.PrometheusURL, "prometheus-url", "", "read the target's series from this Prometheus, e.g. http://127.0.0.1:9090")
	fs.StringVar(&f.cfg.Selector, "selector", "", `with --prometheus-url: label matchers of the target, e.g. '{instance="10.0.0.5:8000"}'`)
	fs.DurationVar(&f.cfg.Since, "since", 30*time.Minute, "with --prometheus-url: window length, ending at --end")
	fs.StringVar(&f.end, "end", "", "with --prometheus-url: window end, RFC 3339 (default now)")
	fs.StringVar(&f.benchResult, "bench-result", "", "a glassbox bench (or vllm bench serve) result JSON: the client's view")
	fs.BoolVar(&f.json, "json", false, "write the report as JSON")
	fs.BoolVar(&f.verify, "verify", false, "replay the observed load on simulated replicas with the current and the recommended flags")
	fs.DurationVar(&f.verifyBudget, "verify-budget", 60*time.Second, "with --verify: time for both replays together")
	fs.Float64Var(&f.verifyScale, "verify-sim-time-scale", 1, "with --verify: the replicas' --sim-time-scale (use the target's)")
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
		f.cfg.Verify = &doctor.VerifyConfig{Start: startReplica(f.verifyScale), Budget: f.verifyBudget}
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

// startReplica starts a simulated replica through serve's own start-up
// path, sizing --kv-cache-memory-bytes to the requested block count.
func startReplica(scale float64) doctor.StartReplica {
	return func(ctx context.Context, rc doctor.ReplicaConfig) (string, []string, func() error, error) {
		flags, err := replicaFlags(rc, scale)
		if err != nil {
			return "", nil, nil, err
		}
		sctx, cancel := context.WithCancel(ctx)
		args := append([]string{"--host", "127.0.0.1", "--port", "0", "--log-level", "error", "--shutdown-timeout", "2s"}, flags...)
		inst, err := startServe(sctx, args, io.Discard, io.Discard)
		if err != nil {
			cancel()
			return "", nil, nil, fmt.Errorf("start replica: %w", err)
		}
		stop := func() error { cancel(); return <-inst.done }
		return "http://" + inst.addr, flags, stop, nil
	}
}

// replicaFlags are the serve flags of a replica configuration.
func replicaFlags(rc doctor.ReplicaConfig, scale float64) ([]string, error) {
	m, err := sim.LookupModel(rc.Model)
	if err != nil {
		return nil, fmt.Errorf("replica flags: %w", err)
	}
	kv := int64(rc.NumBlocks) * int64(rc.BlockSize) * m.KVBytesPerToken(rc.TensorParallel)
	itoa := strconv.Itoa
	flags := []string{"--sim-hardware", rc.Hardware, "--sim-model", rc.Model, "--tensor-parallel-size", itoa(rc.TensorParallel),
		"--max-num-seqs", itoa(rc.MaxNumSeqs), "--max-num-batched-tokens", itoa(rc.MaxNumBatchedTokens),
		"--max-model-len", itoa(rc.MaxModelLen), "--block-size", itoa(rc.BlockSize),
		"--kv-cache-memory-bytes", strconv.FormatInt(kv, 10), "--sim-time-scale", strconv.FormatFloat(scale, 'g', -1, 64)}
	if !rc.PrefixCaching {
		flags = append(flags, "--no-enable-prefix-caching")
	}
	return flags, nil
}
