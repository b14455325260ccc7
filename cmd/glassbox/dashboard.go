package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/live"
)

// runDashboard runs 'glassbox dashboard': the live page of serve's
// /dashboard for any vLLM-compatible target, or a fleet through
// Prometheus, now or over a past window.
func runDashboard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dashboard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	metricsURLs := fs.String("metrics-url", "", "targets' /metrics, comma-separated (one row each)")
	dcgmURLs := fs.String("dcgm-url", "", "their dcgm-exporters, comma-separated in the same order (optional)")
	promURL := fs.String("prometheus-url", "", "read the targets from this Prometheus's range API instead: every instance --selector matches, over any window (a past incident's too)")
	selector := fs.String("selector", "", `with --prometheus-url: label matchers of the targets, e.g. '{job="vllm"}'`)
	since := fs.Duration("since", 15*time.Minute, "with --prometheus-url: the window the page opens on, ending at --end")
	end := fs.String("end", "", "with --prometheus-url: the window's end, RFC 3339 (default now, and the page follows it live)")
	listen := fs.String("listen", "127.0.0.1:8080", "where to serve the page")
	interval := fs.Duration("interval", 2*time.Second, "time between readings (with --prometheus-url: the finest query step, at least the scrape interval; default 15s there)")
	apiKey := fs.String("api-key", "", "bearer token the targets want (their --api-key)")
	var doc diagnoserFlags
	doc.register(fs, "targets'")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || (*metricsURLs == "") == (*promURL == "") {
		return errors.New("dashboard: give --metrics-url URL[,URL…] or --prometheus-url URL")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *promURL == "" && (set["since"] || set["end"] || set["selector"]) {
		return errors.New("dashboard: --since, --end and --selector read Prometheus's history: give --prometheus-url")
	}
	if *interval <= 0 || *since <= 0 {
		return errors.New("dashboard: --interval and --since must be positive")
	}
	if _, err := doc.diagnoser(); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	th, _ := doc.thresholds()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	header := http.Header{}
	if *apiKey != "" {
		header.Set("Authorization", "Bearer "+*apiKey)
	}
	cfg := live.Config{Interval: *interval, Thresholds: th, Hints: doc.hints, HTTPClient: client}
	if *metricsURLs != "" {
		urls, dcgms := strings.Split(*metricsURLs, ","), strings.Split(*dcgmURLs, ",")
		if *dcgmURLs != "" && len(dcgms) != len(urls) {
			return fmt.Errorf("dashboard: %d --dcgm-url entries for %d --metrics-url entries: give one per target (an empty entry for a target without one)", len(dcgms), len(urls))
		}
		for i, u := range urls {
			d := ""
			if i < len(dcgms) {
				d = strings.TrimSpace(dcgms[i])
			}
			p, err := url.Parse(u)
			if err != nil || p.Host == "" {
				return fmt.Errorf("--metrics-url %q: want http://host:port/metrics", u)
			}
			engine := p.Scheme + "://" + p.Host + "/debug/engine"
			t := live.FetchTarget(p.Host, strings.TrimSpace(u), d, engine, client, header)
			t.Engine = glassboxOnly(ctx, t.Engine, client, header, engine)
			cfg.Targets = append(cfg.Targets, t)
		}
	} else {
		if p, err := url.Parse(*promURL); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("--prometheus-url %q: want http://host:port", *promURL)
		}
		pr := &live.Prometheus{URL: strings.TrimRight(*promURL, "/"), Selector: *selector, Step: *interval, Since: *since}
		if !set["interval"] {
			pr.Step = 15 * time.Second // Prometheus's default scrape interval
		}
		if *end != "" {
			t, err := time.Parse(time.RFC3339, *end)
			if err != nil {
				return fmt.Errorf("--end: %w", err)
			}
			pr.End = t
		}
		cfg.Prometheus = pr
	}
	page, err := live.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%d target(s)", len(cfg.Targets))
	if cfg.Prometheus != nil {
		what = "the instances " + cmp.Or(*selector, "{}") + " matches in " + cfg.Prometheus.URL
	}
	fmt.Fprintf(stdout, "glassbox dashboard: %s, the page at http://%s/dashboard/\n", what, ln.Addr())
	go page.Run(ctx)
	srv := &http.Server{Handler: page.Handler("/dashboard"), ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// glassboxOnly keeps the engine view for targets that have one: a vLLM
// server answers /debug/engine with 404.
func glassboxOnly(ctx context.Context, get func(context.Context) ([]byte, error), client *http.Client, header http.Header, url string) func(context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil
	}
	req.Header = header.Clone()
	resp, err := client.Do(req)
	if err != nil {
		return nil
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	return get
}
