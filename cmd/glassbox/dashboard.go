package main

import (
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

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/live"
)

// runDashboard runs 'glassbox dashboard': the live page of serve's
// /dashboard for any vLLM-compatible target, or a fleet through
// Prometheus.
func runDashboard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dashboard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	metricsURLs := fs.String("metrics-url", "", "targets' /metrics, comma-separated (one row each)")
	dcgmURLs := fs.String("dcgm-url", "", "their dcgm-exporters, comma-separated in the same order (optional)")
	promURL := fs.String("prometheus-url", "", "read a fleet from this Prometheus instead (its /federate endpoint), one row per instance")
	selector := fs.String("selector", "", `with --prometheus-url: label matchers of the targets, e.g. '{job="vllm"}'`)
	listen := fs.String("listen", "127.0.0.1:8080", "where to serve the page")
	interval := fs.Duration("interval", 2*time.Second, "time between readings")
	apiKey := fs.String("api-key", "", "bearer token the targets want (their --api-key)")
	var hints doctor.Hints
	fs.StringVar(&hints.GPU, "gpu", "", "the targets' GPU (h100, h200, a100-80g, l40s), for MFU when their series do not say")
	fs.IntVar(&hints.MaxNumSeqs, "max-num-seqs", 0, "the targets' --max-num-seqs, when their series do not say")
	fs.IntVar(&hints.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "the targets' --max-num-batched-tokens, when their series do not say")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || (*metricsURLs == "") == (*promURL == "") {
		return errors.New("dashboard: give --metrics-url URL[,URL…] or --prometheus-url URL")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	header := http.Header{}
	if *apiKey != "" {
		header.Set("Authorization", "Bearer "+*apiKey)
	}
	var targets []live.Target
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
			targets = append(targets, t)
		}
	} else {
		var err error
		if targets, err = live.FederatedTargets(ctx, *promURL, *selector, client); err != nil {
			return err
		}
	}
	page, err := live.New(live.Config{Targets: targets, Interval: *interval, Hints: hints})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "glassbox dashboard: %d target(s), the page at http://%s/dashboard/\n", len(targets), ln.Addr())
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
