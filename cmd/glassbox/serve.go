package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// serveFlags are serve's command line, with vLLM's names where vLLM has the
// same knob.
type serveFlags struct {
	engineFlags
	host, port      string
	model           string
	device          string
	enforceEager    bool
	simTimeScale    float64
	apiKey          string
	threads         int
	mmap            bool
	tokenizer       string
	shutdownTimeout time.Duration
	stepTimeout     string // a duration, seconds, or "" for the executor's default
	readTimeout     time.Duration
	keepAlive       float64
	limitConcur     int
	logLevel        string
	obs             observeFlags
	thresholds      thresholdFlags // the doctor's on /dashboard
}

func parseServeFlags(args []string, stderr io.Writer) (*serveFlags, error) {
	f := &serveFlags{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.host, "host", "0.0.0.0", "address to listen on")
	fs.StringVar(&f.port, "port", "8000", "port to listen on (0 picks a free one)")
	fs.StringVar(&f.model, "model", "", "GGUF model to run (a path, or hf://OWNER/REPO/FILE.gguf); empty serves the simulator")
	fs.StringVar(&f.device, "device", "auto", "where --model runs: cuda (an NVIDIA GPU), cpu, or auto (the GPU when its driver loads and it runs the model, else the CPU)")
	fs.BoolVar(&f.enforceEager, "enforce-eager", false, "on the GPU, run every step kernel by kernel: no CUDA graphs for decode steps (vLLM's flag)")
	fs.IntVar(&f.threads, "threads", runtime.NumCPU(), "compute threads of the CPU executor")
	fs.StringVar(&f.tokenizer, "tokenizer", "", "with --model: a tokenizer.json (or a directory holding it and tokenizer_config.json) to use instead of the GGUF's")
	fs.BoolVar(&f.mmap, "mmap", false, "map the GGUF file instead of reading it into (huge-page) memory: starts faster and shares the page cache, decodes slower")
	f.engineFlags.register(fs)
	fs.Float64Var(&f.simTimeScale, "sim-time-scale", 1, "simulated step time multiplier: 1 is real time, 0.1 is ten times faster, 0 never waits")
	fs.StringVar(&f.apiKey, "api-key", "", "require this bearer token on the API (default: $VLLM_API_KEY)")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long in-flight requests may take to finish")
	fs.StringVar(&f.stepTimeout, "step-timeout", "", "the engine's watchdog: a step running longer (e.g. 90s, or seconds as VLLM_ENGINE_ITERATION_TIMEOUT_S takes them) kills the engine and /health answers 503; 0 turns it off "+
		"(default: 60s, vLLM's, on a GPU and the simulator; 30m on the CPU)")
	fs.DurationVar(&f.readTimeout, "request-read-timeout", 30*time.Second, "how long a request's body may take to arrive before the connection is closed with 408 (0: no limit); headers have 10s")
	fs.Float64Var(&f.keepAlive, "timeout-keep-alive", 5, "seconds an idle keep-alive connection is kept open (uvicorn's flag and default)")
	fs.IntVar(&f.limitConcur, "limit-concurrency", 0, "most requests handled at once before new ones get 503 with Retry-After (uvicorn's flag; 0: no limit); probes and /metrics are always answered")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	f.obs.register(fs)
	f.thresholds.register(fs)
	if err := fs.Parse(spaceLists(args, "lora-modules")); err != nil {
		return nil, err
	}
	f.engineFlags.visited(fs)
	f.obs.visited(fs)
	if fs.NArg() > 0 {
		// vLLM's 'vllm serve MODEL' form.
		if f.model != "" || fs.NArg() > 1 {
			return nil, fmt.Errorf("serve takes at most one model, got %q", fs.Args())
		}
		f.model = fs.Arg(0)
	}
	if f.apiKey == "" {
		f.apiKey = os.Getenv("VLLM_API_KEY")
	}
	if err := f.obs.resolve(os.Getenv); err != nil {
		return nil, err
	}
	if f.readTimeout < 0 || f.keepAlive < 0 || f.limitConcur < 0 {
		return nil, fmt.Errorf("--request-read-timeout, --timeout-keep-alive and --limit-concurrency must not be negative")
	}
	if _, err := parseStepTimeout(f.stepTimeout); err != nil {
		return nil, err
	}
	return f, nil
}

// parseStepTimeout reads --step-timeout as replica.Config.StepTimeout
// takes it: "" is the executor's default (0), "0" turns the watchdog off
// (negative); a bare number is seconds, as vLLM's
// VLLM_ENGINE_ITERATION_TIMEOUT_S.
func parseStepTimeout(s string) (time.Duration, error) {
	if s = strings.TrimSpace(s); s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	zero := err == nil && !strings.ContainsAny(s, "123456789") // "0", "0s": not "0.5ns", which rounds to 0
	if err != nil {
		secs, nerr := strconv.ParseFloat(s, 64)
		if nerr != nil || math.IsNaN(secs) || math.Abs(secs) > math.MaxInt64/float64(time.Second) {
			return 0, fmt.Errorf("--step-timeout %q: want a duration such as 90s or 5m, or seconds", s)
		}
		d, zero = time.Duration(secs*float64(time.Second)), secs == 0
	}
	switch {
	case d < 0:
		return 0, fmt.Errorf("--step-timeout %s: must not be negative (0 turns the watchdog off)", s)
	case d == 0 && !zero:
		return 0, fmt.Errorf("--step-timeout %s: below a nanosecond, the watchdog's resolution (0 turns it off)", s)
	case d == 0:
		return -1, nil
	}
	return d, nil
}

// parseCount reads 8192, 8k, 32K, 2m or 8G as vLLM's human-readable
// integers do: lower-case suffixes are decimal (k = 1000), upper-case ones
// binary (K = 1024). Empty gives def.
func parseCount(s string, def int) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	mult := 1.0
	switch s[len(s)-1] {
	case 'k':
		mult = 1e3
	case 'm':
		mult = 1e6
	case 'g':
		mult = 1e9
	case 'K':
		mult = 1 << 10
	case 'M':
		mult = 1 << 20
	case 'G':
		mult = 1 << 30
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v*mult > 1<<50 {
		return 0, fmt.Errorf("not a count: %q", s)
	}
	return int(v * mult), nil
}

func parseLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
