package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/source"
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

// doctorFlags are doctor's command line: where the window comes from (one
// source), the doctor (thresholds and hints), and what to do with the
// report.
type doctorFlags struct {
	metricsURL, dcgmURL, metricsFile string
	duration, interval               time.Duration
	promURL, selector, end           string
	since                            time.Duration
	doc                              diagnoserFlags
	benchResult                      string
	json                             bool
	verify                           bool
	verifySend                       time.Duration
	set                              map[string]bool // the flags given
}

func parseDoctorFlags(args []string, stderr io.Writer) (*doctorFlags, error) {
	f := &doctorFlags{}
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.metricsURL, "metrics-url", "", "sample this /metrics directly, e.g. http://127.0.0.1:8000/metrics")
	fs.StringVar(&f.dcgmURL, "dcgm-url", "", "with --metrics-url: also sample the target's dcgm-exporter, e.g. http://10.0.0.5:9400/metrics")
	fs.StringVar(&f.metricsFile, "metrics-file", "", "read one saved /metrics scrape (a snapshot of the gauges, not a window)")
	fs.DurationVar(&f.duration, "duration", 60*time.Second, "with --metrics-url: how long to sample")
	fs.DurationVar(&f.interval, "interval", 5*time.Second, "time between readings (the Prometheus query step)")
	fs.StringVar(&f.promURL, "prometheus-url", "", "read the target's series from this Prometheus, e.g. http://127.0.0.1:9090")
	fs.StringVar(&f.selector, "selector", "", `with --prometheus-url: label matchers of the target, e.g. '{instance="10.0.0.5:8000"}'`)
	fs.DurationVar(&f.since, "since", 30*time.Minute, "with --prometheus-url: window length, ending at --end")
	fs.StringVar(&f.end, "end", "", "with --prometheus-url: window end, RFC 3339 (default now)")
	f.doc.register(fs, "target's")
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
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	return f, nil
}

// source is the one source the flags name.
func (f *doctorFlags) source() (source.Source, error) {
	given := 0
	for _, u := range []string{f.metricsURL, f.promURL, f.metricsFile} {
		if u != "" {
			given++
		}
	}
	if given != 1 {
		return nil, errors.New("give exactly one of --metrics-url, --prometheus-url and --metrics-file")
	}
	for _, only := range []struct{ flag, with, given string }{
		{"dcgm-url", "metrics-url", f.metricsURL}, {"duration", "metrics-url", f.metricsURL},
		{"selector", "prometheus-url", f.promURL}, {"since", "prometheus-url", f.promURL}, {"end", "prometheus-url", f.promURL},
	} {
		if f.set[only.flag] && only.given == "" {
			return nil, fmt.Errorf("--%s goes with --%s", only.flag, only.with)
		}
	}
	switch {
	case f.metricsURL != "":
		return source.Scrape{URL: f.metricsURL, DCGMURL: f.dcgmURL, Duration: f.duration, Interval: f.interval}, nil
	case f.promURL != "":
		p := source.Prometheus{URL: f.promURL, Selector: f.selector, Since: f.since, Step: f.interval}
		if f.end != "" {
			t, err := time.Parse(time.RFC3339, f.end)
			if err != nil {
				return nil, fmt.Errorf("--end: %w", err)
			}
			p.End = t
		}
		return p, nil
	}
	return source.File{Path: f.metricsFile}, nil
}

// request is one diagnosis: the source, the doctor, the client's view and
// the replay, if asked for.
type request struct {
	src    source.Source
	doc    doctor.Diagnoser
	client *doctor.ClientView
	verify *doctor.VerifyConfig
}

func (f *doctorFlags) request() (*request, error) {
	src, err := f.source()
	if err != nil {
		return nil, err
	}
	r := &request{src: src}
	if r.doc, err = f.doc.diagnoser(); err != nil {
		return nil, err
	}
	if f.benchResult != "" {
		b, err := os.Open(f.benchResult)
		if err != nil {
			return nil, fmt.Errorf("--bench-result: %w", err)
		}
		defer b.Close()
		if r.client, err = doctor.ParseBenchResult(b); err != nil {
			return nil, fmt.Errorf("--bench-result %s: %w", f.benchResult, err)
		}
	}
	if f.verify {
		r.verify = &doctor.VerifyConfig{Replay: replayVirtual, Send: f.verifySend}
	}
	return r, nil
}

// diagnose collects the window (or a fleet's), diagnoses it and, when
// asked, verifies the recommendation.
func diagnose(ctx context.Context, r *request) (*doctor.Report, error) {
	ms, err := r.src.Collect(ctx)
	if err != nil {
		return nil, err
	}
	if len(ms) > 1 { // a fleet: a selector that matches several instances
		sel := r.src.FleetSelector()
		if r.verify != nil {
			return nil, fmt.Errorf("--verify replays one replica, and %s matches %d instances: add instance=\"…\" to the selector", sel, len(ms))
		}
		return r.doc.Fleet(ms[0].Window.Target, sel, ms), nil
	}
	rep := r.doc.Diagnose(ms[0].Window, r.client)
	if r.verify != nil {
		rep.Verification = doctor.Verify(ctx, *r.verify, rep)
	}
	return rep, nil
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
	req, err := f.request()
	if err != nil {
		return &exitError{doctorExitUsage, fmt.Errorf("doctor: %w", err)}
	}
	rep, err := diagnose(ctx, req)
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
