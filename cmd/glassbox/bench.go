package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
)

// benchFlags are bench's command line, with `vllm bench serve`'s names: the
// load (shared with simulate) and the HTTP side.
type benchFlags struct {
	loadFlags
	host        string
	port        int
	temperature float64
	quiet       bool
	chaos       string
	targetSet   bool // --base-url, --host or --port was given
	keySet      bool // --api-key was given
	loraModules listFlag
}

func parseBenchFlags(args []string, stderr io.Writer) (*benchFlags, error) {
	f := &benchFlags{}
	c := &f.cfg
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.BaseURL, "base-url", "", "server base URL (default http://HOST:PORT, or --config's server.base_url)")
	fs.StringVar(&f.host, "host", "127.0.0.1", "server host, when --base-url is not given")
	fs.IntVar(&f.port, "port", 8000, "server port, when --base-url is not given")
	fs.StringVar(&c.Backend, "backend", "", "openai (or vllm): /v1/completions; openai-chat: /v1/chat/completions (default openai, or --config's api.type)")
	fs.StringVar(&c.Endpoint, "endpoint", "", "API path (default from --backend)")
	fs.StringVar(&c.Model, "model", "", "model name (default --config's server.model_name, else the server's first model)")
	fs.StringVar(&c.APIKey, "api-key", os.Getenv("OPENAI_API_KEY"), "bearer token (default $OPENAI_API_KEY, as vLLM)")
	fs.StringVar(&c.MetricsURL, "metrics-url", "", "server /metrics to scrape during the run (default BASE-URL/metrics; - for none)")
	fs.IntVar(&c.NumWarmups, "num-warmups", 0, "warm-up requests sent and awaited before the measured run, not counted")
	fs.Float64Var(&f.temperature, "temperature", math.NaN(), "sampling temperature (default: the server's)")
	fs.BoolVar(&c.Sweep, "sweep", false, "synchronous pass, max-throughput pass, then rates between; reports the knee")
	fs.IntVar(&c.SweepSize, "sweep-size", 10, "sweep passes in all")
	fs.Float64Var(&c.SLOAttained, "slo-attainment", 0.9, "share of requests within every SLO for a sweep rate to count as meeting them")
	fs.DurationVar(&c.ScrapeInterval, "metrics-interval", time.Second, "how often to scrape --metrics-url")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", 10*time.Minute, "per-request limit")
	fs.BoolVar(&f.quiet, "disable-tqdm", false, "no progress line")
	fs.BoolVar(&c.Soak, "soak", false, "a soak: read the server's memory, goroutines and latencies every --metrics-interval over --duration and fit the memory's trend (docs/reliability.md)")
	fs.StringVar(&f.chaos, "chaos", "", "make a share of the requests misbehave and reconcile with the server's metrics, e.g. cut=0.1,reset=0.5,malformed=0.05,oversized=0.01,slow-headers=0.01,slow-body=0.01,no-read=0.02,burst=500 (docs/reliability.md)")
	fs.Var(&f.loraModules, "lora-modules", "LoRA adapters the server serves; each request goes to one at random (vLLM's bench flag; space-separated or repeated)")
	f.loadFlags.register(fs)
	if err := fs.Parse(spaceLists(joinGoodput(args), "lora-modules")); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("bench: unexpected argument %q", fs.Arg(0))
	}
	fs.Visit(func(fl *flag.Flag) {
		f.targetSet = f.targetSet || fl.Name == "base-url" || fl.Name == "host" || fl.Name == "port"
		f.keySet = f.keySet || fl.Name == "api-key"
	})
	f.loadVisited(fs)
	return f, f.toConfig()
}

// toConfig turns the string-valued flags into the config.
func (f *benchFlags) toConfig() error {
	if err := f.loadFlags.resolve(); err != nil {
		return err
	}
	c := &f.cfg
	if w := f.workload; w != nil {
		// inference-perf's server and api blocks fill what the flags leave.
		if !f.targetSet && w.Server.BaseURL != "" {
			c.BaseURL = w.Server.BaseURL
		}
		if c.Model == "" {
			c.Model = w.Server.ModelName
		}
		if c.Backend == "" && w.API.Type == "chat" {
			c.Backend = "openai-chat"
		}
		if k := w.Server.APIKey; k != nil && !f.keySet && c.APIKey == "" {
			c.APIKey = *k
		}
		if w.Server.Type == "mock" {
			return fmt.Errorf("--config %s: server.type mock: inference-perf's mock client sends no requests; glassbox bench needs a server (run the file with glassbox simulate)", f.config)
		}
		if w.Server.CertPath != nil {
			c.ClientCert, c.ClientKey = *w.Server.CertPath, *w.Server.KeyPath
		}
		if n, t := w.Load.NumWorkers, w.Load.WorkerMaxTCPConnections; t != nil {
			workers := runtime.NumCPU()
			if n != nil {
				workers = *n
			}
			c.MaxConnections = max(workers, 1) * *t
		}
	}
	if c.BaseURL == "" {
		c.BaseURL = "http://" + f.host + ":" + strconv.Itoa(f.port)
	}
	if !math.IsNaN(f.temperature) {
		c.Temperature = &f.temperature
	}
	if f.chaos != "" {
		var err error
		if c.Chaos, err = bench.ParseChaos(f.chaos); err != nil {
			return err
		}
	}
	for _, m := range f.loraModules {
		name, _, _ := strings.Cut(m, "=") // serve's name=path form names the adapter too
		c.LoRAModules = append(c.LoRAModules, name)
	}
	return nil
}

// joinGoodput lets --goodput take several space-separated pairs, as vLLM's
// nargs="+" does: the words after it that are not flags join its value.
func joinGoodput(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a != "--goodput" && a != "-goodput" {
			out = append(out, a)
			continue
		}
		var pairs []string
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
			pairs = append(pairs, args[i])
		}
		out = append(out, "--goodput="+strings.Join(pairs, " "))
	}
	return out
}

// runBench runs 'glassbox bench'.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseBenchFlags(args, stderr)
	if err != nil {
		return err
	}
	f.printNotes(stderr)
	if !f.quiet && isTerminal(stderr) && os.Getenv("CI") != "true" {
		f.cfg.Progress = stderr
	}
	res, err := bench.Run(ctx, f.cfg)
	if res != nil {
		res.WriteSummary(stdout)
		if werr := f.write(res, stdout); werr != nil {
			err = errors.Join(err, werr)
		}
		for _, p := range res.Passes {
			if p.Chaos != nil && !p.Chaos.Reconciled {
				err = errors.Join(err, errors.New("bench --chaos: the server's metrics do not reconcile with what its clients saw"))
			}
		}
	}
	return err
}

// isTerminal reports whether w is a character device, so the progress
// line is drawn only for a person watching.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
