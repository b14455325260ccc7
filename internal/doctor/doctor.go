// Package doctor is `glassbox doctor`: it reads a serving engine's metrics
// over a window, either by sampling its /metrics directly or through
// Prometheus range queries, and names the bottleneck with evidence (the
// numbers and the PromQL that reproduces each one), the inference and the
// recommended change (DESIGN.md §5, docs/doctor.md). With Verify it replays
// the observed load through internal/bench against simulated replicas with
// the current and the recommended flags.
//
// It owns the signal window (one shape for both sources), the rules, the
// report and the replay. It is a black box over HTTP: it must never import
// engine, sched, kvcache or an executor (internal/layering enforces this),
// nor internal/metrics or internal/dashboards, which reach the engine; it
// names the few families it reads itself (names.go). It reads no flags and
// no environment: cmd/glassbox does, and starts the verification replicas.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// Config is one doctor invocation: exactly one of MetricsURL and
// PrometheusURL.
type Config struct {
	MetricsURL  string        // sample this /metrics directly
	DCGMURL     string        // with MetricsURL: also sample this dcgm-exporter, the target's GPUs
	MetricsFile string        // or read one saved scrape: a snapshot, not a window
	Duration    time.Duration // for MetricsURL: how long; default 60s
	Interval    time.Duration // between readings (the Prometheus step); default 5s

	PrometheusURL string        // read from this Prometheus instead
	Selector      string        // label matchers of the target, e.g. {instance="10.0.0.5:8000"}
	Since         time.Duration // window length ending at End; default 30m
	End           time.Time     // default one interval before now

	// Hints say what a vLLM target's series do not: its GPU, for MFU and
	// bandwidth utilisation, and its scheduler limits.
	Hints Hints

	Client *ClientView   // a bench result: the client's view; nil for none
	Verify *VerifyConfig // replay the load against simulated replicas; nil for no

	HTTPClient *http.Client
	Now        func() time.Time
}

func (c Config) withDefaults() (Config, error) {
	given := 0
	for _, u := range []string{c.MetricsURL, c.PrometheusURL, c.MetricsFile} {
		if u != "" {
			given++
		}
	}
	if given != 1 {
		return c, errors.New("check config: give exactly one of a metrics URL, a Prometheus URL and a metrics file")
	}
	if c.DCGMURL != "" && c.MetricsURL == "" {
		return c, errors.New("check config: a DCGM URL goes with a metrics URL (through Prometheus, DCGM's series join by instance)")
	}
	if c.Hints.GPU != "" {
		if _, err := profiles.LookupHardware(c.Hints.GPU); err != nil {
			return c, fmt.Errorf("check config: --gpu: %w", err)
		}
	}
	for _, u := range []string{c.MetricsURL, c.PrometheusURL, c.DCGMURL} {
		if u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return c, fmt.Errorf("check URL %q: want http://host:port/…", u)
		}
	}
	if c.Duration == 0 {
		c.Duration = 60 * time.Second
	}
	if c.Interval == 0 {
		c.Interval = 5 * time.Second
	}
	if c.Since == 0 {
		c.Since = 30 * time.Minute
	}
	if c.Duration < 0 || c.Interval <= 0 || c.Since < 0 {
		return c, errors.New("check config: durations must be positive")
	}
	if c.PrometheusURL != "" && c.Since/c.Interval > 10000 {
		return c, fmt.Errorf("check config: %v at %v steps is over Prometheus' 11000-point limit: raise --interval", c.Since, c.Interval)
	}
	if c.MetricsURL != "" && c.Duration < c.Interval {
		return c, errors.New("check config: --duration must be at least one --interval")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.End.IsZero() {
		// A step before now: the last scrape of every target is then in.
		c.End = c.Now().Add(-c.Interval)
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}
	}
	return c, nil
}

// Collect reads the window cfg describes.
func Collect(ctx context.Context, cfg Config) (*Window, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var w *Window
	if cfg.MetricsFile != "" {
		return readFile(cfg.MetricsFile, cfg.Now(), cfg.Hints)
	}
	if cfg.MetricsURL != "" {
		src := &scrapeSource{url: cfg.MetricsURL, dcgmURL: cfg.DCGMURL, duration: cfg.Duration, interval: cfg.Interval, client: cfg.HTTPClient, now: cfg.Now}
		if w, err = src.collect(ctx); err != nil {
			return nil, err
		}
		if u, err := url.Parse(cfg.MetricsURL); err == nil {
			w.Selector = fmt.Sprintf("{instance=%q}", u.Host)
		}
	} else {
		matchers, err := ParseSelector(cfg.Selector)
		if err != nil {
			return nil, err
		}
		if w, err = newPromSource(cfg, matchers).collect(ctx); err != nil {
			return nil, err
		}
	}
	if len(w.Snapshots) < 2 {
		return nil, fmt.Errorf("read %s: %d of %d readings succeeded, need 2: %s",
			w.Target, len(w.Snapshots), len(w.Snapshots)+w.Missed, strings.Join(w.Problems, "; "))
	}
	w.Hints = cfg.Hints
	return w, nil
}

// readFile is the window of one saved scrape.
func readFile(path string, now time.Time, hints Hints) (*Window, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read metrics file: %w", err)
	}
	defer f.Close()
	w := NewWindow("file", path)
	w.Hints = hints
	snap, err := parseExposition(f, now, w)
	if err != nil {
		return nil, fmt.Errorf("read metrics file %s: %w", path, err)
	}
	w.Snapshots = append(w.Snapshots, *snap)
	return w, nil
}

// Run collects the window, diagnoses it and, when asked, verifies the
// recommendation.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	// The window is fixed once, here: a Prometheus that takes a while to
	// answer (restarting) must not move it on for the later queries.
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if c.PrometheusURL != "" {
		matchers, err := ParseSelector(c.Selector)
		if err != nil {
			return nil, err
		}
		src := newPromSource(c, matchers)
		insts, err := src.instances(ctx)
		if err != nil {
			return nil, err
		}
		if len(insts) > 1 {
			if cfg.Verify != nil {
				return nil, fmt.Errorf("--verify replays one replica, and %s matches %d instances: add instance=\"…\" to the selector", c.Selector, len(insts))
			}
			c.End = src.end // every instance over the same window
			return runFleet(ctx, c, matchers, insts)
		}
	}
	w, err := Collect(ctx, c)
	if err != nil {
		return nil, err
	}
	rep := Diagnose(w, cfg.Client)
	if cfg.Verify != nil {
		rep.Verification = verify(ctx, *cfg.Verify, evaluate(w, DefaultThresholds()), rep.Findings)
	}
	return rep, nil
}

// Report is the doctor's answer.
type Report struct {
	Source   string    `json:"source"` // metrics or prometheus
	Target   string    `json:"target"`
	Selector string    `json:"selector"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Readings int       `json:"readings"`
	Missed   int       `json:"missed_readings"`
	Engine   string    `json:"engine"` // glassbox or vllm (no glassbox_* series)
	// Questions are the three answers every report opens with; nil only
	// for a fleet's own report, whose instances each have theirs.
	Questions    *Questions    `json:"questions,omitempty"`
	Findings     []Finding     `json:"findings"`
	Client       *ClientView   `json:"client,omitempty"`
	Verification *Verification `json:"verification,omitempty"`
	// Fleet holds every instance's report when the selector matched
	// several (Findings then holds the fleet's own).
	Fleet *Fleet `json:"fleet,omitempty"`
}

// Worst is the highest severity among the findings (Info with none).
func (r *Report) Worst() Severity {
	worst := Info
	if r.Fleet != nil {
		worst = r.Fleet.worst()
	}
	for _, f := range r.Findings {
		worst = max(worst, f.Severity)
	}
	return worst
}

// ExitCode is the process status docs/doctor.md documents: 0 nothing
// above info, 1 a warning, 2 something critical. (3, a usage or read
// error, is cmd's.)
func (r *Report) ExitCode() int {
	switch r.Worst() {
	case Critical:
		return 2
	case Warning:
		return 1
	}
	return 0
}

// Names lists the findings' names, in report order.
func (r *Report) Names() []string {
	out := make([]string, len(r.Findings))
	for i, f := range r.Findings {
		out[i] = f.Name
	}
	return out
}
