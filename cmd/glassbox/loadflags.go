package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/inferenceperf"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// loadFlags describe a load and what to report of it, with vllm bench
// serve's names: bench sends it over HTTP, simulate runs it in virtual
// time, from the same flags.
type loadFlags struct {
	cfg                             bench.Config // the load-shaping and reporting fields
	requestRate                     string
	burstiness                      string
	goodput                         string
	percentileMetrics, percentiles  string
	rampStrategy                    string
	rampStart, rampEnd              float64
	inputLen, outputLen             int
	saveResult, saveDetailed        bool
	resultDir, resultFile, htmlFile string
	config                          string // an inference-perf configuration
	compat                          string
	workload                        *inferenceperf.Config
	planOptions                     inferenceperf.PlanOptions // how --config's plan is built
	seedSet                         bool                      // --seed was given
	numPromptsSet                   bool                      // --num-prompts was given
	ipReport                        string                    // --inference-perf-report
	noStream                        bool
	configRaw                       []byte // the --config file as given
	agent                           agentLoadFlags
}

func (f *loadFlags) register(fs *flag.FlagSet) {
	c, d := &f.cfg, &f.cfg.Dataset
	fs.StringVar(&c.Label, "label", "", "result label (default the backend)")
	fs.StringVar(&f.config, "config", "", "an inference-perf configuration (YAML: load stages, api, data) to run instead of the dataset and rate flags")
	fs.StringVar(&f.compat, "inference-perf-compat", string(inferenceperf.Current), "run --config as inference-perf current does, or as e8e0aa99 (October 2025) did: it ignored shared_prefix's long names and multi-turn sessions")
	fs.StringVar(&d.Name, "dataset-name", "random", "random, sharegpt, prefix-repetition, custom, sonnet, burstgpt, hf, trace (a request trace at its times), or agent (multi-turn agent sessions: --agent-*)")
	f.agent.register(fs)
	fs.StringVar(&d.Path, "dataset-path", "", "the dataset's file (ShareGPT JSON, custom JSONL, sonnet text, BurstGPT or trace CSV), or for hf the hub dataset")
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
	fs.IntVar(&d.SonnetInputLen, "sonnet-input-len", 550, "sonnet: prompt tokens, with the chat template")
	fs.IntVar(&d.SonnetOutputLen, "sonnet-output-len", 150, "sonnet: output tokens")
	fs.IntVar(&d.SonnetPrefixLen, "sonnet-prefix-len", 200, "sonnet: tokens of the shared first lines")
	fs.StringVar(&d.HFSubset, "hf-subset", "", "hf: the dataset's subset (default: default)")
	fs.StringVar(&d.HFSplit, "hf-split", "", "hf: the split (default: train)")
	fs.StringVar(&d.HFName, "hf-name", "", "hf: the hub dataset a local --dataset-path copies")
	fs.IntVar(&d.HFOutputLen, "hf-output-len", 0, "hf: output tokens (default the dataset's)")
	fs.BoolVar(&d.NoOversample, "no-oversample", false, "send only the dataset's usable prompts when it has fewer than --num-prompts")
	fs.BoolVar(&d.DisableShuffle, "disable-shuffle", false, "hf: keep the dataset's order")
	fs.BoolVar(&d.SkipChatTemplate, "skip-chat-template", false, "hf: do not apply the chat template to the datasets vLLM templates")
	fs.BoolVar(&f.noStream, "no-stream", false, "vLLM's: load an hf dataset whole (refused: glassbox reads its first records)")
	fs.IntVar(&c.NumPrompts, "num-prompts", 1000, "prompts to send (and the dataset size with --duration)")
	fs.DurationVar(&c.Duration, "duration", 0, "send for this long instead of --num-prompts requests, e.g. 60s; with --dataset-name agent, start sessions for this long (--agent-at-duration says what becomes of the running ones)")
	fs.BoolVar(&c.IgnoreEOS, "ignore-eos", false, "send ignore_eos (always on for the random dataset)")
	fs.StringVar(&f.requestRate, "request-rate", "inf", "requests per second; inf sends all at once")
	fs.StringVar(&f.burstiness, "burstiness", "1", "gamma shape of arrival gaps: 1 is Poisson, <1 burstier, inf constant")
	fs.IntVar(&c.MaxConcurrency, "max-concurrency", 0, "most requests in flight (0: no cap); with --dataset-name agent, most sessions running at once")
	fs.StringVar(&f.rampStrategy, "ramp-up-strategy", "", "linear or exponential ramp of the rate over the run")
	fs.Float64Var(&f.rampStart, "ramp-up-start-rps", 0, "ramp: starting rate")
	fs.Float64Var(&f.rampEnd, "ramp-up-end-rps", 0, "ramp: final rate")
	fs.Int64Var(&c.Seed, "seed", 0, "seed of datasets and arrivals")
	fs.StringVar(&f.percentileMetrics, "percentile-metrics", "ttft,tpot,itl", "metrics to report: ttft,tpot,itl,e2el,client_queue_time,e2el_including_client_queue")
	fs.StringVar(&f.percentiles, "metric-percentiles", "99", "percentiles to report, e.g. 50,90,99")
	fs.StringVar(&f.goodput, "goodput", "", `SLOs in ms for goodput, e.g. "ttft:200 tpot:50 e2el:2000"`)
	fs.BoolVar(&f.saveResult, "save-result", false, "write the JSON result")
	fs.BoolVar(&f.saveDetailed, "save-detailed", false, "include per-request arrays in the JSON result")
	fs.StringVar(&f.resultDir, "result-dir", "", "directory of the JSON result")
	fs.StringVar(&f.resultFile, "result-filename", "", "JSON result file name (default as vLLM's)")
	fs.StringVar(&f.htmlFile, "html-report", "", "write a self-contained HTML report here")
	fs.StringVar(&f.ipReport, "inference-perf-report", "", "with --config: the directory of inference-perf's report files (default its storage.local_storage.path, else reports-TIMESTAMP; - for none)")
}

// resolve turns the string-valued flags into the config and reads --config.
func (f *loadFlags) resolve() error {
	c := &f.cfg
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
	if f.inputLen > 0 {
		c.Dataset.RandomInputLen = f.inputLen
	}
	if o := f.outputLen; o > 0 {
		c.Dataset.RandomOutputLen, c.Dataset.SharegptOutputLen, c.Dataset.CustomOutputLen, c.Dataset.PrefixOutputLen = o, o, o, o
		c.Dataset.SonnetOutputLen, c.Dataset.HFOutputLen = o, o
	}
	if f.noStream {
		return errors.New("--no-stream: glassbox reads an hf dataset's first records a page at a time and shuffles those; it cannot load the whole dataset")
	}
	c.Dataset.Rows = hubRows
	if err := f.agent.apply(c); err != nil {
		return err
	}
	switch inferenceperf.Compat(f.compat) {
	case inferenceperf.Current, inferenceperf.Legacy:
	default:
		return fmt.Errorf("--inference-perf-compat %q: want %s or %s", f.compat, inferenceperf.Current, inferenceperf.Legacy)
	}
	if f.config != "" {
		if f.workload, err = inferenceperf.Read(f.config); err != nil {
			return fmt.Errorf("--config %w", err)
		}
		if f.configRaw, err = os.ReadFile(f.config); err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		if b := f.workload.Load.BaseSeed; b != nil && !f.seedSet {
			c.Seed = *b // inference-perf's load.base_seed seeds the run unless --seed does
		}
		f.planOptions = inferenceperf.PlanOptions{Compat: inferenceperf.Compat(f.compat), Fetch: fetchDataset, Workers: runtime.NumCPU()}
		f.workload.Bench(c, f.planOptions)
	}
	return nil
}

// reportDir is where inference-perf would write the configuration's
// reports: storage.local_storage.path with {timestamp} filled in, else
// reports-TIMESTAMP; --inference-perf-report overrides it.
func (f *loadFlags) reportDir(at time.Time) (dir, prefix string) {
	stamp := at.Format("20060102-150405")
	dir = "reports-" + stamp
	if s := f.workload.Storage; s != nil && s.LocalStorage != nil {
		if p := s.LocalStorage.Path; p != nil && *p != "" {
			dir = strings.ReplaceAll(*p, "{timestamp}", stamp)
		}
		if p := s.LocalStorage.ReportFilePrefix; p != nil {
			prefix = *p
		}
	}
	if f.ipReport != "" {
		dir = f.ipReport
	}
	return dir, prefix
}

// loadVisited records which load flags the command line set.
func (f *loadFlags) loadVisited(fs *flag.FlagSet) {
	fs.Visit(func(fl *flag.Flag) {
		f.seedSet = f.seedSet || fl.Name == "seed"
		f.numPromptsSet = f.numPromptsSet || fl.Name == "num-prompts"
	})
}

// printNotes shows what a configuration asks for that glassbox does not
// do, which does not change the load.
func (f *loadFlags) printNotes(w io.Writer) {
	if f.workload == nil {
		return
	}
	for _, n := range f.workload.Notes {
		fmt.Fprintf(w, "glassbox: note: %s: %s\n", f.config, n)
	}
}

// fetchDataset downloads a hub dataset file into the cache, as --model
// hf://… does, with progress on stderr.
func fetchDataset(ctx context.Context, ref string) (string, error) {
	return hubFetch(ctx, ref, os.Stderr)
}

// write saves the JSON result and the HTML report when asked, and with
// --config inference-perf's report files.
func (f *loadFlags) write(res *bench.Result, stdout io.Writer) error {
	if f.workload != nil && f.ipReport != "-" {
		dir, prefix := f.reportDir(res.Date)
		files, err := inferenceperf.WriteReports(res, f.workload, dir, prefix, f.configRaw)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "inference-perf reports written to %s (%d files)\n", dir, len(files))
	}
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
