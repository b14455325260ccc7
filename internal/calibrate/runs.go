// Package calibrate fits the simulated GPU's coefficients to measured runs
// of a real vLLM server and reports the simulator's error on them: glassbox
// simulate calibrate. A run is a server configuration, the load it was
// given and what its client measured; calibrate replays each in virtual
// time (internal/simulate), compares, and fits the profile's terms by least
// squares around the replay (BLIS's observe → replay → calibrate loop).
package calibrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/glassbox-llm/glassbox/internal/inferenceperf"
	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// Run is one measured run.
type Run struct {
	Name   string
	Server Server
	Load   *inferenceperf.Config
	Plan   inferenceperf.PlanOptions
	// Measured is what the client saw, in milliseconds.
	Measured Metrics
}

// Server is the vLLM configuration a run measured, as the simulator takes it.
type Server struct {
	Hardware             string // a sim hardware profile
	Model                string // a sim model profile
	TensorParallel       int
	MaxNumSeqs           int
	MaxNumBatchedTokens  int
	MaxModelLen          int
	GPUMemoryUtilization float64
	NoPrefixCaching      bool
	// KVOffloadGiB is host memory for vLLM's CPU KV offload
	// (--kv-offloading-size, the native backend); 0 is none.
	KVOffloadGiB float64
}

// Metrics are a run's client-side latencies in milliseconds; zero is not
// measured. TPOT is (E2E − TTFT)/(output tokens − 1), as the reference
// table defines it.
type Metrics struct {
	TTFT, TTFTP90, TTFTP99 float64
	E2E, E2EP90, E2EP99    float64
	TPOT                   float64
	// Stages are each stage's means, where a run of several stages
	// reports them (nil otherwise).
	Stages []StageMetrics
}

// StageMetrics are one stage's mean TTFT and E2E, in milliseconds.
type StageMetrics struct{ TTFT, E2E float64 }

// vllmDefaults are the campaign's, and vLLM's for what the campaign leaves.
func vllmDefaults(hw string) Server {
	return Server{Hardware: hw, TensorParallel: 1, MaxNumSeqs: 128, MaxNumBatchedTokens: 2048, MaxModelLen: 4096, GPUMemoryUtilization: 0.9}
}

// ReadRuns reads a directory of runs, one per subdirectory holding:
//
//   - workload.yaml: the inference-perf configuration the run used;
//   - server.args: the vllm serve command line (--model, --tensor-parallel-size,
//     --max-num-seqs, --max-num-batched-tokens, --max-model-len,
//     --gpu-memory-utilization, --no-enable-prefix-caching);
//   - result.json: what the client measured, either a vllm/glassbox bench
//     result (mean_ttft_ms, p90_ttft_ms, mean_e2el_ms, …) or inference-perf's
//     summary_lifecycle_metrics.json;
//   - run.yaml (optional): hardware (a sim profile, default h100), compat
//     (the inference-perf version: current or e8e0aa99) and drift (the
//     tokens re-tokenisation added to each question, [lo, hi]).
func ReadRuns(dir string) ([]Run, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	var runs []Run
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		r, err := readRun(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read run %s: %w", e.Name(), err)
		}
		r.Name = e.Name()
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("read runs: no run directories in %s", dir)
	}
	return runs, nil
}

func readRun(dir string) (Run, error) {
	var meta struct {
		Hardware string `yaml:"hardware"`
		Compat   string `yaml:"compat"`
		Drift    [2]int `yaml:"drift"`
		Seed     int64  `yaml:"seed"`
	}
	meta.Hardware = "h100"
	if b, err := os.ReadFile(filepath.Join(dir, "run.yaml")); err == nil {
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		dec.KnownFields(true)
		if err := dec.Decode(&meta); err != nil && !errors.Is(err, io.EOF) {
			return Run{}, fmt.Errorf("run.yaml: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return Run{}, err
	}
	r := Run{Plan: inferenceperf.PlanOptions{Compat: inferenceperf.Compat(meta.Compat), Seed: meta.Seed, Drift: meta.Drift}}
	f, err := os.Open(filepath.Join(dir, "workload.yaml"))
	if err != nil {
		return r, err
	}
	defer f.Close()
	if r.Load, err = inferenceperf.Parse(f); err != nil {
		return r, err
	}
	args, err := os.ReadFile(filepath.Join(dir, "server.args"))
	if err != nil {
		return r, err
	}
	if r.Server, err = ParseServeArgs(string(args), meta.Hardware); err != nil {
		return r, err
	}
	res, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return r, err
	}
	if r.Measured, err = parseResult(res, outputLen(r.Load)); err != nil {
		return r, err
	}
	return r, nil
}

// outputLen is the fixed output length of a shared_prefix load, 0 when
// the lengths vary.
func outputLen(c *inferenceperf.Config) int {
	if sp := c.Data.SharedPrefix; sp != nil {
		if n, ok := sp.OutputLen.Fixed(); ok && sp.OutputDistribution == nil {
			return n
		}
	}
	return 0
}

// serveValueFlags are the flags ParseServeArgs reads, which take a value.
var serveValueFlags = map[string]bool{"model": true, "tensor-parallel-size": true, "tp": true, "max-num-seqs": true,
	"max-num-batched-tokens": true, "max-model-len": true, "gpu-memory-utilization": true, "kv-offloading-size": true, "kv-offloading-backend": true}

// vllmBoolFlags are vllm serve's common switches, which take no value, so
// the word after one is not read as its value.
var vllmBoolFlags = map[string]bool{"enable-prefix-caching": true, "no-enable-prefix-caching": true,
	"enable-chunked-prefill": true, "no-enable-chunked-prefill": true, "enforce-eager": true, "trust-remote-code": true,
	"disable-log-requests": true, "disable-log-stats": true, "disable-custom-all-reduce": true, "enable-log-requests": true,
	"async-scheduling": true, "no-async-scheduling": true}

// ParseServeArgs reads the scheduling flags of a vllm serve command line
// (the words "vllm serve" and a positional model are allowed).
func ParseServeArgs(line, hardware string) (Server, error) {
	s := vllmDefaults(hardware)
	words := strings.Fields(strings.ReplaceAll(line, "\\\n", " "))
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "vllm" || w == "serve" {
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !strings.HasPrefix(w, "-") {
			if s.Model == "" {
				name, val, hasVal = "model", w, true
			} else {
				return s, fmt.Errorf("server.args: unexpected %q", w)
			}
		}
		if !hasVal && !vllmBoolFlags[name] {
			next := i+1 < len(words) && !strings.HasPrefix(words[i+1], "-")
			switch {
			case next:
				i++
				val = words[i]
			case serveValueFlags[name]:
				return s, fmt.Errorf("server.args: --%s needs a value", name)
			} // else a switch this reader does not know, followed by another flag
		}
		var err error
		switch name {
		case "model":
			m, lerr := profiles.LookupModel(val)
			if lerr != nil {
				return s, fmt.Errorf("server.args: %w", lerr)
			}
			s.Model = m.Name
		case "tensor-parallel-size", "tp":
			s.TensorParallel, err = strconv.Atoi(val)
		case "max-num-seqs":
			s.MaxNumSeqs, err = strconv.Atoi(val)
		case "max-num-batched-tokens":
			s.MaxNumBatchedTokens, err = strconv.Atoi(val)
		case "max-model-len":
			s.MaxModelLen, err = strconv.Atoi(val)
		case "gpu-memory-utilization":
			s.GPUMemoryUtilization, err = strconv.ParseFloat(val, 64)
		case "no-enable-prefix-caching":
			s.NoPrefixCaching = true
		case "kv-offloading-size":
			s.KVOffloadGiB, err = strconv.ParseFloat(val, 64)
		case "kv-offloading-backend":
			if !strings.EqualFold(val, "native") {
				err = errors.New("only vLLM's native backend is simulated")
			}
		}
		if err != nil {
			return s, fmt.Errorf("server.args: --%s %q: %w", name, val, err)
		}
	}
	if s.Model == "" {
		return s, errors.New("server.args: no --model")
	}
	return s, nil
}

// parseResult reads a bench result or inference-perf's lifecycle summary.
func parseResult(b []byte, outLen int) (Metrics, error) {
	var bench struct {
		MeanTTFT *float64 `json:"mean_ttft_ms"`
		P90TTFT  float64  `json:"p90_ttft_ms"`
		P99TTFT  float64  `json:"p99_ttft_ms"`
		MeanE2E  *float64 `json:"mean_e2el_ms"`
		P90E2E   float64  `json:"p90_e2el_ms"`
		P99E2E   float64  `json:"p99_e2el_ms"`
		MeanTPOT float64  `json:"mean_tpot_ms"`
	}
	if err := json.Unmarshal(b, &bench); err != nil {
		return Metrics{}, fmt.Errorf("result.json: %w", err)
	}
	if bench.MeanTTFT != nil && bench.MeanE2E != nil {
		return Metrics{TTFT: *bench.MeanTTFT, TTFTP90: bench.P90TTFT, TTFTP99: bench.P99TTFT,
			E2E: *bench.MeanE2E, E2EP90: bench.P90E2E, E2EP99: bench.P99E2E, TPOT: bench.MeanTPOT}, nil
	}
	type summary struct {
		Mean *float64 `json:"mean"`
		P90  float64  `json:"p90"`
		P99  float64  `json:"p99"`
	}
	var ip struct {
		Successes struct {
			Latency struct {
				TTFT    summary `json:"time_to_first_token"`
				Request summary `json:"request_latency"`
			} `json:"latency"`
		} `json:"successes"`
	}
	if err := json.Unmarshal(b, &ip); err != nil {
		return Metrics{}, fmt.Errorf("result.json: %w", err)
	}
	l := ip.Successes.Latency
	if l.TTFT.Mean == nil || l.Request.Mean == nil {
		return Metrics{}, errors.New("result.json: neither a bench result (mean_ttft_ms, mean_e2el_ms) nor inference-perf's lifecycle summary (successes.latency)")
	}
	m := Metrics{TTFT: 1e3 * *l.TTFT.Mean, TTFTP90: 1e3 * l.TTFT.P90, TTFTP99: 1e3 * l.TTFT.P99,
		E2E: 1e3 * *l.Request.Mean, E2EP90: 1e3 * l.Request.P90, E2EP99: 1e3 * l.Request.P99}
	if outLen > 1 {
		// inference-perf's own TPOT of these versions counts SSE lines, not
		// tokens: derive it as the reference does.
		m.TPOT = (m.E2E - m.TTFT) / float64(outLen-1)
	}
	return m, nil
}
