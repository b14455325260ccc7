// Package dashboards is glassbox's monitoring as code: the Grafana
// dashboards (built with the Grafana Foundation SDK), the Prometheus
// recording and alerting rules with their promtool unit tests, and the
// Prometheus and Alertmanager configurations that `glassbox monitoring
// export` writes and the repository keeps under monitoring/.
//
// Every metric it queries is named through internal/metricspec's
// constants, so a renamed family breaks the build or the drift test instead
// of leaving an empty panel, and every alert and threshold line fires on
// the doctor's Thresholds (internal/doctor), so an alert and the finding
// that explains it agree. It only generates files: from the rest of
// glassbox it imports internal/metricspec (for names and bucket bounds) and
// the doctor's pure core (for its thresholds), never the engine,
// scheduler, executors or server, and it reads no environment.
package dashboards

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// Config holds every parameter of the generated files. The zero value is
// not usable; start from Default and override.
type Config struct {
	// Scraping.
	Job                string        // scrape job name; every rule selects job="<Job>"
	Target             string        // host:port serving /metrics
	MetricsPath        string        // usually /metrics
	ScrapeInterval     time.Duration // also the rule evaluation interval
	AlertmanagerTarget string        // host:port of Alertmanager
	// DCGMTarget is the host:port of the dcgm-exporter beside the target
	// (glassbox serve --sim-dcgm-port, or NVIDIA's on :9400), scraped as
	// job DCGMJob with its instance label rewritten to Target's, so that
	// GPU and engine series of one replica share an instance. Empty: none.
	DCGMJob, DCGMTarget string
	// Fleet, when set, replaces Target and DCGMTarget with replicas found
	// through file-based service discovery: prometheus.yml reads
	// targets/glassbox.json and targets/dcgm.json beside it, which the
	// export writes from this list and which can be edited (Prometheus
	// rereads them) as replicas come and go.
	Fleet []FleetTarget

	// Alertmanager routing: critical and warning alerts go to separate
	// webhook receivers; the grouping timers are parameters so that a test
	// can make delivery take seconds.
	CriticalWebhookURL string
	WarningWebhookURL  string
	GroupWait          time.Duration
	GroupInterval      time.Duration
	RepeatInterval     time.Duration

	// RunbookURL is where docs/runbooks.md is published; alerts and panels
	// link to RunbookURL#<alert name in lower case>.
	RunbookURL string

	// Rule windows: RateWindow is the range of every rate and average,
	// For how long a condition must hold before a warning or latency alert
	// fires, ShortFor the same for the outage alerts (target down, engine
	// stalled), and StallWindow how long without a generated token counts
	// as stalled.
	RateWindow  time.Duration
	For         time.Duration
	ShortFor    time.Duration
	StallWindow time.Duration

	// Thresholds are the doctor's: the alerts of its findings
	// (preemption rate, KV watermark, queue share, abort share, draft
	// acceptance, load imbalance) and the dashboards' lines fire on them.
	Thresholds doctor.Thresholds

	// The SLOs' alerts, which no finding names: the doctor explains a
	// breach by its capacity and latency findings.
	E2EP95Seconds  float64 // p95 end-to-end latency
	TTFTSLOSeconds float64 // p99 TTFT above it alerts; also the TTFT attainment tile's bound (a bucket bound)
	ITLSLOSeconds  float64 // inter-token attainment tile's bound (a bucket bound)
	E2ESLOSeconds  float64 // end-to-end attainment tile's bound (a bucket bound)
	ErrorRatio     float64 // share of HTTP responses that are 5xx
}

// FleetTarget is one replica of a fleet: the host:port Prometheus scrapes
// for the engine (its --metrics-port, or --port) and, if it has one, its
// dcgm-exporter's host:port, whose series are labelled with Target as
// their instance.
type FleetTarget struct {
	Target, DCGM string
}

// Default is the configuration the repository's monitoring/ files are
// generated from: glassbox on 127.0.0.1:8000 scraped every 5 s.
func Default() Config {
	return Config{
		Job:                "glassbox",
		Target:             "127.0.0.1:8000",
		MetricsPath:        "/metrics",
		ScrapeInterval:     5 * time.Second,
		AlertmanagerTarget: "127.0.0.1:9093",
		DCGMJob:            "dcgm",
		DCGMTarget:         "127.0.0.1:9400",
		CriticalWebhookURL: "http://127.0.0.1:5001/critical",
		WarningWebhookURL:  "http://127.0.0.1:5001/warning",
		GroupWait:          30 * time.Second,
		GroupInterval:      5 * time.Minute,
		RepeatInterval:     4 * time.Hour,
		RunbookURL:         "https://github.com/glassbox-llm/glassbox/blob/main/docs/runbooks.md",
		RateWindow:         5 * time.Minute,
		For:                5 * time.Minute,
		ShortFor:           time.Minute,
		StallWindow:        5 * time.Minute,
		Thresholds:         doctor.DefaultThresholds(),
		E2EP95Seconds:      10,
		TTFTSLOSeconds:     0.5,
		ITLSLOSeconds:      0.1,
		E2ESLOSeconds:      10,
		ErrorRatio:         0.05,
	}
}

// Validate reports the first parameter that would generate a broken file.
func (c *Config) Validate() error {
	switch {
	case c.Job == "" || c.Target == "" && len(c.Fleet) == 0 || c.MetricsPath == "" || c.AlertmanagerTarget == "":
		return errors.New("job, target, metrics path and alertmanager target must not be empty")
	case c.CriticalWebhookURL == "" || c.WarningWebhookURL == "" || c.RunbookURL == "":
		return errors.New("webhook and runbook URLs must not be empty")
	}
	for name, d := range map[string]time.Duration{
		"scrape interval": c.ScrapeInterval, "group wait": c.GroupWait, "group interval": c.GroupInterval,
		"repeat interval": c.RepeatInterval, "rate window": c.RateWindow, "for": c.For,
		"short for": c.ShortFor, "stall window": c.StallWindow,
	} {
		if d <= 0 || d%time.Millisecond != 0 {
			return fmt.Errorf("%s must be a positive whole number of milliseconds, got %v", name, d)
		}
	}
	if c.RateWindow < 2*c.ScrapeInterval || c.StallWindow < 2*c.ScrapeInterval {
		return fmt.Errorf("rate window %v and stall window %v must span at least two scrapes of %v", c.RateWindow, c.StallWindow, c.ScrapeInterval)
	}
	if err := c.Thresholds.Validate(); err != nil {
		return err
	}
	if !(c.Thresholds.PreemptionRate > 0) {
		return fmt.Errorf("threshold preemption_rate must be positive, got %v", c.Thresholds.PreemptionRate)
	}
	for name, v := range map[string]float64{
		"e2e p95": c.E2EP95Seconds, "ttft slo": c.TTFTSLOSeconds,
		"itl slo": c.ITLSLOSeconds, "e2e slo": c.E2ESLOSeconds,
	} {
		if !(v > 0) {
			return fmt.Errorf("%s threshold must be positive, got %v", name, v)
		}
	}
	if !(c.ErrorRatio > 0 && c.ErrorRatio < 1) {
		return fmt.Errorf("error ratio threshold must be in (0, 1), got %v", c.ErrorRatio)
	}
	seen := map[string]bool{}
	for _, f := range c.Fleet {
		if f.Target == "" || seen[f.Target] || f.DCGM != "" && seen[f.DCGM] {
			return fmt.Errorf("fleet target %+v: every replica needs a target, and no address may repeat", f)
		}
		seen[f.Target], seen[f.DCGM] = true, f.DCGM != ""
	}
	for _, slo := range []struct {
		name    string
		v       float64
		buckets []float64
	}{
		{"ttft slo", c.TTFTSLOSeconds, metricspec.TTFTBuckets()},
		{"itl slo", c.ITLSLOSeconds, metricspec.TokenStepBuckets()},
		{"e2e slo", c.E2ESLOSeconds, metricspec.RequestLatencyBuckets()},
	} {
		if !slices.Contains(slo.buckets, slo.v) {
			return fmt.Errorf("%s %v must be a bucket bound of its histogram (%v), or the attainment tile reads no bucket", slo.name, slo.v, slo.buckets)
		}
	}
	return nil
}

// promDuration writes d as Prometheus does ("5m", "1m30s", "500ms").
func promDuration(d time.Duration) string { return model.Duration(d).String() }
