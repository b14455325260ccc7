package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/glassbox-llm/glassbox/internal/dashboards"
)

const monitoringUsage = `Usage: glassbox monitoring export [flags] DIR

Writes Grafana dashboards, Prometheus rules (with promtool unit tests), a
Prometheus scrape config and an Alertmanager config under DIR.
The repository's monitoring/ directory is 'glassbox monitoring export monitoring'.

With --chart, DIR is a Helm chart (deploy/helm/glassbox) and only the files
its templates embed are written, under DIR/files: the same rules and
dashboards ('glassbox monitoring export --chart deploy/helm/glassbox').

Flags:
`

// thresholdShortcuts are monitoring export's flags for the thresholds its
// alerts fire on: each sets one of the doctor's (as --threshold does).
var thresholdShortcuts = []struct{ flag, name, help string }{
	{"preemption-rate", "preemption_rate", "alert above this many preemptions per second"},
	{"spec-acceptance", "spec_acceptance_low", "alert when speculative decoding accepts under this share of its draft tokens"},
	{"kv-cache-usage", "kv_watermark", "alert above this KV-cache usage (0-1)"},
	{"queue-time-ratio", "queue_share", "alert above this share of request time spent queued"},
	{"abort-ratio", "abort_share", "alert above this share of requests aborted"},
	{"imbalance-ratio", "imbalance_ratio", "alert when a replica's queue exceeds this multiple of its fleet's mean"},
	{"imbalance-min-waiting", "imbalance_min_waiting", "... and this many requests"},
}

// runMonitoring turns the monitoring command line into a dashboards.Config
// and writes the files.
func runMonitoring(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "export" {
		fmt.Fprint(stderr, monitoringUsage)
		return errors.New("monitoring: the only subcommand is 'export DIR'")
	}
	c := dashboards.Default()
	fs := flag.NewFlagSet("monitoring export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, monitoringUsage); fs.PrintDefaults() }
	fs.StringVar(&c.Target, "target", c.Target, "host:port Prometheus scrapes (glassbox's --port, or --metrics-port when set)")
	fs.StringVar(&c.Job, "job", c.Job, "scrape job name; the rules select it")
	fs.StringVar(&c.MetricsPath, "metrics-path", c.MetricsPath, "path of the metrics endpoint")
	fs.DurationVar(&c.ScrapeInterval, "scrape-interval", c.ScrapeInterval, "scrape and rule evaluation interval")
	fs.StringVar(&c.AlertmanagerTarget, "alertmanager", c.AlertmanagerTarget, "host:port of Alertmanager")
	fs.StringVar(&c.CriticalWebhookURL, "critical-webhook-url", c.CriticalWebhookURL, "webhook receiving critical alerts")
	fs.StringVar(&c.WarningWebhookURL, "warning-webhook-url", c.WarningWebhookURL, "webhook receiving warning alerts")
	fs.StringVar(&c.RunbookURL, "runbook-url", c.RunbookURL, "published location of docs/runbooks.md")
	fs.DurationVar(&c.RateWindow, "rate-window", c.RateWindow, "range of every rate and average in the rules")
	fs.DurationVar(&c.For, "for", c.For, "how long a condition holds before a warning or latency alert fires")
	fs.DurationVar(&c.ShortFor, "short-for", c.ShortFor, "the same for target-down and engine-stalled")
	fs.DurationVar(&c.StallWindow, "stall-window", c.StallWindow, "time without a generated token, with requests running, that counts as stalled")
	fs.Float64Var(&c.E2EP95Seconds, "e2e-p95-seconds", c.E2EP95Seconds, "alert above this p95 end-to-end latency")
	fs.Float64Var(&c.TTFTSLOSeconds, "ttft-slo-seconds", c.TTFTSLOSeconds, "TTFT SLO: p99 above it alerts; a TTFT bucket bound")
	fs.Float64Var(&c.ITLSLOSeconds, "itl-slo-seconds", c.ITLSLOSeconds, "inter-token latency SLO of the attainment tile; a bucket bound")
	fs.Float64Var(&c.E2ESLOSeconds, "e2e-slo-seconds", c.E2ESLOSeconds, "end-to-end SLO of the attainment tile; a bucket bound")
	fs.Float64Var(&c.ErrorRatio, "error-ratio", c.ErrorRatio, "alert above this share of 5xx responses")
	var th thresholdFlags
	th.register(fs)
	shortcuts := map[string]*float64{}
	for _, sc := range thresholdShortcuts {
		v, _ := c.Thresholds.Get(sc.name)
		shortcuts[sc.name] = fs.Float64(sc.flag, v, sc.help+" (the doctor's "+sc.name+" threshold: its finding moves with it)")
	}
	fleet := fs.String("fleet", "", "scrape many replicas through file_sd instead of --target: target[=dcgm-target],... (writes prometheus/targets/*.json)")
	chart := fs.Bool("chart", false, "DIR is the Helm chart: write only the rules and dashboards its templates embed, under DIR/files")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return errors.New("monitoring export: no output directory given")
	}
	dir := rest[0]
	if err := fs.Parse(rest[1:]); err != nil { // flags after DIR
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("monitoring export: one directory expected, got %q", append([]string{dir}, fs.Args()...))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	if c.Thresholds, err = th.thresholds(); err != nil {
		return err
	}
	for _, sc := range thresholdShortcuts { // given, they win over --thresholds and --threshold
		if set[sc.flag] {
			if err := c.Thresholds.Set(sc.name, *shortcuts[sc.name]); err != nil {
				return fmt.Errorf("--%s: %w", sc.flag, err)
			}
		}
	}
	c.Fleet = dashboards.ParseFleet(*fleet)
	generate := dashboards.Files
	if *chart {
		generate = dashboards.ChartFiles
	}
	files, err := generate(c)
	if err != nil {
		return err
	}
	if err := dashboards.Write(dir, files); err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintf(stdout, "wrote %s\n", f.Path)
	}
	return nil
}
