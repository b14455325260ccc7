package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// benchFlags are bench's command line, with `vllm bench serve`'s names.
type benchFlags struct {
	cfg                             bench.Config
	host                            string
	port                            int
	requestRate                     string
	burstiness                      string
	goodput                         string
	percentileMetrics, percentiles  string
	rampStrategy                    string
	rampStart, rampEnd              float64
	inputLen, outputLen             int
	temperature                     float64
	saveResult, saveDetailed, quiet bool
	resultDir, resultFile, htmlFile string
}

func parseBenchFlags(args []string, stderr io.Writer) (*benchFlags, error) {
	f := &benchFlags{}
	c, d := &f.cfg, &f.cfg.Dataset
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.BaseURL, "base-url", "", "server base URL (default http://HOST:PORT)")
	fs.StringVar(&f.host, "host", "127.0.0.1", "server host, when --base-url is not given")
	fs.IntVar(&f.port, "port", 8000, "server port, when --base-url is not given")
	fs.StringVar(&c.Backend, "backend", "openai", "openai (or vllm): /v1/completions; openai-chat: /v1/chat/completions")
	fs.StringVar(&c.Endpoint, "endpoint", "", "API path (default from --backend)")
	fs.StringVar(&c.Model, "model", "", "model name (default: the server's first model)")
	fs.StringVar(&c.APIKey, "api-key", os.Getenv("OPENAI_API_KEY"), "bearer token (default $OPENAI_API_KEY, as vLLM)")
	fs.StringVar(&c.MetricsURL, "metrics-url", "", "server /metrics to scrape during the run (default BASE-URL/metrics; - for none)")
	fs.StringVar(&c.Label, "label", "", "result label (default the backend)")
	fs.StringVar(&d.Name, "dataset-name", "random", "random, sharegpt, prefix-repetition or custom")
	fs.StringVar(&d.Path, "dataset-path", "", "ShareGPT JSON or custom JSONL file")
	fs.IntVar(&f.inputLen, "input-len", 0, "sets --random-input-len")
	fs.IntVar(&f.outputLen, "output-len", 0, "sets every dataset's output length")
	fs.IntVar(&d.RandomInputLen, "random-input-len", 1024, "random: prompt tokens")
	fs.IntVar(&d.RandomOutputLen, "random-output-len", 128, "random: output tokens")
	fs.Float64Var(&d.RandomRangeRatio, "random-range-ratio", 0, "random: lengths drawn from [L(1-r), L(1+r)]")
	fs.IntVar(&d.RandomPrefixLen, "random-prefix-len", 0, "random: tokens of a prefix shared by every prompt")
	fs.IntVar(&d.SharegptOutputLen, "sharegpt-output-len", 0, "sharegpt: fixed output length (default the dataset's)")
	fs.IntVar(&d.CustomOutputLen, "custom-output-len", 256, "custom: output tokens")
	fs.IntVar(&d.PrefixLen, "prefix-repetition-prefix-len", 256, "prefix-repetition: prefix tokens")
	fs.IntVar(&d.SuffixLen, "prefix-repetition-suffix-len", 256, "prefix-repetition: suffix tokens")
	fs.IntVar(&d.NumPrefixes, "prefix-repetition-num-prefixes", 10, "prefix-repetition: distinct prefixes")
	fs.IntVar(&d.PrefixOutputLen, "prefix-repetition-output-len", 128, "prefix-repetition: output tokens")
	fs.IntVar(&c.NumPrompts, "num-prompts", 1000, "prompts to send (and the dataset size with --duration)")
	fs.DurationVar(&c.Duration, "duration", 0, "send for this long instead of --num-prompts requests, e.g. 60s")
	fs.IntVar(&c.NumWarmups, "num-warmups", 0, "warm-up requests sent first and not counted")
	fs.BoolVar(&c.IgnoreEOS, "ignore-eos", false, "send ignore_eos (always on for the random dataset)")
	fs.Float64Var(&f.temperature, "temperature", math.NaN(), "sampling temperature (default: the server's)")
	fs.StringVar(&f.requestRate, "request-rate", "inf", "requests per second; inf sends all at once")
	fs.StringVar(&f.burstiness, "burstiness", "1", "gamma shape of arrival gaps: 1 is Poisson, <1 burstier, inf constant")
	fs.IntVar(&c.MaxConcurrency, "max-concurrency", 0, "most requests in flight (0: no cap)")
	fs.StringVar(&f.rampStrategy, "ramp-up-strategy", "", "linear or exponential ramp of the rate over the run")
	fs.Float64Var(&f.rampStart, "ramp-up-start-rps", 0, "ramp: starting rate")
	fs.Float64Var(&f.rampEnd, "ramp-up-end-rps", 0, "ramp: final rate")
	fs.Int64Var(&c.Seed, "seed", 0, "seed of datasets and arrivals")
	fs.StringVar(&f.percentileMetrics, "percentile-metrics", "ttft,tpot,itl", "metrics to report: ttft,tpot,itl,e2el,client_queue_time,e2el_including_client_queue")
	fs.StringVar(&f.percentiles, "metric-percentiles", "99", "percentiles to report, e.g. 50,90,99")
	fs.StringVar(&f.goodput, "goodput", "", `SLOs in ms for goodput, e.g. "ttft:200 tpot:50 e2el:2000"`)
	fs.BoolVar(&c.Sweep, "sweep", false, "synchronous pass, max-throughput pass, then rates between; reports the knee")
	fs.IntVar(&c.SweepSize, "sweep-size", 10, "sweep passes in all")
	fs.Float64Var(&c.SLOAttained, "slo-attainment", 0.9, "share of requests within every SLO for a sweep rate to count as meeting them")
	fs.DurationVar(&c.ScrapeInterval, "metrics-interval", time.Second, "how often to scrape --metrics-url")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", 10*time.Minute, "per-request limit")
	fs.BoolVar(&f.saveResult, "save-result", false, "write the JSON result")
	fs.BoolVar(&f.saveDetailed, "save-detailed", false, "include per-request arrays in the JSON result")
	fs.StringVar(&f.resultDir, "result-dir", "", "directory of the JSON result")
	fs.StringVar(&f.resultFile, "result-filename", "", "JSON result file name (default as vLLM's)")
	fs.StringVar(&f.htmlFile, "html-report", "", "write a self-contained HTML report here")
	fs.BoolVar(&f.quiet, "disable-tqdm", false, "no progress line")
	if err := fs.Parse(joinGoodput(args)); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("bench: unexpected argument %q", fs.Arg(0))
	}
	return f, f.toConfig()
}

// toConfig turns the string-valued flags into the config.
func (f *benchFlags) toConfig() error {
	c := &f.cfg
	if c.BaseURL == "" {
		c.BaseURL = "http://" + f.host + ":" + strconv.Itoa(f.port)
	}
	var err error
	if c.RequestRate, err = strconv.ParseFloat(f.requestRate, 64); err != nil {
		return fmt.Errorf("parse --request-rate: %w", err)
	}
	if c.Burstiness, err = strconv.ParseFloat(f.burstiness, 64); err != nil {
		return fmt.Errorf("parse --burstiness: %w", err)
	}
	if c.Goodput, err = bench.ParseGoodput(f.goodput); err != nil {
		return err
	}
	if c.Percentiles, err = bench.ParsePercentiles(f.percentiles); err != nil {
		return err
	}
	c.PercentileMetrics = strings.Split(f.percentileMetrics, ",")
	if f.rampStrategy != "" {
		c.Ramp = &workload.Ramp{Strategy: f.rampStrategy, Start: f.rampStart, End: f.rampEnd}
	}
	if !math.IsNaN(f.temperature) {
		c.Temperature = &f.temperature
	}
	if f.inputLen > 0 {
		c.Dataset.RandomInputLen = f.inputLen
	}
	if o := f.outputLen; o > 0 {
		c.Dataset.RandomOutputLen, c.Dataset.SharegptOutputLen, c.Dataset.CustomOutputLen, c.Dataset.PrefixOutputLen = o, o, o, o
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
	if !f.quiet && isTerminal(stderr) && os.Getenv("CI") != "true" {
		f.cfg.Progress = stderr
	}
	res, err := bench.Run(ctx, f.cfg)
	if res != nil {
		res.WriteSummary(stdout)
		if werr := f.write(res, stdout); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return err
}

// write saves the JSON result and the HTML report when asked.
func (f *benchFlags) write(res *bench.Result, stdout io.Writer) error {
	if f.saveResult || f.resultFile != "" {
		name, err := res.Save(f.resultDir, f.resultFile, f.saveDetailed)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "Result written to", name)
	}
	if f.htmlFile != "" {
		out, err := os.Create(f.htmlFile)
		if err != nil {
			return fmt.Errorf("create report: %w", err)
		}
		if err := errors.Join(res.WriteHTML(out), out.Close()); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
		fmt.Fprintln(stdout, "Report written to", f.htmlFile)
	}
	return nil
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
