package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/profiler"
	"github.com/glassbox-llm/glassbox/internal/server"
	"github.com/glassbox-llm/glassbox/internal/tracing"
)

// observeFlags are serve's endpoint, security, tracing and profiling flags.
type observeFlags struct {
	metricsPort         string
	metricsAuthFile     string
	sslCertfile         string
	sslKeyfile          string
	otlpEndpoint        string
	otlpProtocol        string // from OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
	collectDetailed     string
	detailed            bool
	profilerDir         string
	profilerMaxSteps    int
	profilerMaxDuration time.Duration
	dcgmPort            string
	dcgmInterval        time.Duration
	simDCGMPort         string        // --sim-dcgm-port: the old name of --dcgm-port
	simDCGMInterval     time.Duration // --sim-dcgm-interval: the old name of --dcgm-interval
	hostname            string        // the DCGM series' Hostname: $NODE_NAME, else the host's name
	set                 map[string]bool
}

func (o *observeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.metricsPort, "metrics-port", "", "also serve /metrics (and /health) on this port, away from API load (0 picks a free one)")
	fs.StringVar(&o.metricsAuthFile, "metrics-auth-file", "", "protect the --metrics-port listener's /metrics: a file of bearer tokens or user:password lines (see docs/security.md)")
	fs.StringVar(&o.sslCertfile, "ssl-certfile", "", "serve HTTPS with this PEM certificate (both listeners)")
	fs.StringVar(&o.sslKeyfile, "ssl-keyfile", "", "the PEM private key of --ssl-certfile")
	fs.StringVar(&o.otlpEndpoint, "otlp-traces-endpoint", "", "send an OpenTelemetry span per request to this OTLP endpoint (gRPC; OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf for HTTP)")
	fs.StringVar(&o.collectDetailed, "collect-detailed-traces", "", "add child spans for queueing, prefill chunks, decode and preemptions: model, worker or all (needs --otlp-traces-endpoint)")
	fs.StringVar(&o.profilerDir, "profiler-dir", "", "enable POST /start_profile and /stop_profile, writing Perfetto traces and CPU profiles here")
	fs.IntVar(&o.profilerMaxSteps, "profiler-max-steps", 2000, "a profile stops itself after this many engine steps")
	fs.DurationVar(&o.profilerMaxDuration, "profiler-max-duration", 30*time.Second, "a profile stops itself after this long")
	fs.StringVar(&o.dcgmPort, "dcgm-port", "", "serve NVIDIA dcgm-exporter's metrics on this port: the GPU's own (NVML) with --device cuda, the simulated GPUs' without --model (dcgm-exporter's is 9400; 0 picks a free one)")
	fs.DurationVar(&o.dcgmInterval, "dcgm-interval", time.Second, "how often the GPU's counters are read (dcgm-exporter's collection interval), or the period the simulated ones average over")
	fs.StringVar(&o.simDCGMPort, "sim-dcgm-port", "", "the old name of --dcgm-port")
	fs.DurationVar(&o.simDCGMInterval, "sim-dcgm-interval", 0, "the old name of --dcgm-interval")
}

// visited records which observe flags the command line set.
func (o *observeFlags) visited(fs *flag.FlagSet) {
	o.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { o.set[fl.Name] = true })
}

// resolveDCGM folds the old names into --dcgm-port and --dcgm-interval,
// refusing both names at once.
func (o *observeFlags) resolveDCGM() error {
	for _, a := range []struct {
		old, name string
		apply     func()
	}{
		{"sim-dcgm-port", "dcgm-port", func() { o.dcgmPort = o.simDCGMPort }},
		{"sim-dcgm-interval", "dcgm-interval", func() { o.dcgmInterval = o.simDCGMInterval }},
	} {
		if !o.set[a.old] {
			continue
		}
		if o.set[a.name] {
			return fmt.Errorf("--%s is the old name of --%s: give one of them", a.old, a.name)
		}
		a.apply()
	}
	if o.dcgmPort == "" && (o.set["dcgm-interval"] || o.set["sim-dcgm-interval"]) {
		return errors.New("--dcgm-interval sets how the --dcgm-port exporter reads: give --dcgm-port too")
	}
	return nil
}

// resolve checks the flags together and reads the standard OTLP protocol
// variables (the only environment tracing takes from cmd/; the SDK reads
// the other OTEL_* variables itself).
func (o *observeFlags) resolve(getenv func(string) string) error {
	if (o.sslCertfile == "") != (o.sslKeyfile == "") {
		return errors.New("--ssl-certfile and --ssl-keyfile go together")
	}
	if o.metricsAuthFile != "" && o.metricsPort == "" {
		return errors.New("--metrics-auth-file protects the --metrics-port listener: give --metrics-port too (the API port's /metrics takes --api-key)")
	}
	if err := o.resolveDCGM(); err != nil {
		return err
	}
	if o.dcgmPort != "" {
		// dcgm-exporter's own rule for its Hostname label.
		if o.hostname = getenv("NODE_NAME"); o.hostname == "" {
			o.hostname, _ = os.Hostname()
		}
	}
	o.otlpProtocol = getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if o.otlpProtocol == "" {
		o.otlpProtocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if o.collectDetailed != "" {
		for _, v := range strings.Split(o.collectDetailed, ",") {
			switch strings.TrimSpace(v) {
			case "model", "worker", "all", "true":
			default:
				return fmt.Errorf("--collect-detailed-traces: %q is not one of model, worker, all", v)
			}
		}
		if o.otlpEndpoint == "" {
			return errors.New("--collect-detailed-traces needs --otlp-traces-endpoint")
		}
		o.detailed = true
	}
	return nil
}

// observability is what the observe flags build: the tracer, the profiler
// and the metrics listener's credentials, each nil when not asked for.
type observability struct {
	tracer   *tracing.Tracer
	profiler *profiler.Profiler
	creds    *server.Credentials
}

func newObservability(f *observeFlags, log *slog.Logger) (*observability, error) {
	o := &observability{}
	if f.metricsAuthFile != "" {
		data, err := os.ReadFile(f.metricsAuthFile)
		if err != nil {
			return nil, fmt.Errorf("--metrics-auth-file: %w", err)
		}
		if o.creds, err = server.ParseCredentials(data); err != nil {
			return nil, fmt.Errorf("--metrics-auth-file %s: %w", f.metricsAuthFile, err)
		}
	}
	if f.profilerDir != "" {
		p, err := profiler.New(profiler.Config{Dir: f.profilerDir, MaxSteps: f.profilerMaxSteps,
			MaxDuration: f.profilerMaxDuration, Version: version, Logger: log})
		if err != nil {
			return nil, err
		}
		o.profiler = p
	}
	if f.otlpEndpoint != "" {
		t, err := tracing.New(context.Background(), tracing.Config{Endpoint: f.otlpEndpoint, Protocol: f.otlpProtocol,
			Detailed: f.detailed, ServiceVersion: version, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("--otlp-traces-endpoint: %w", err)
		}
		o.tracer = t
	}
	return o, nil
}

// observers are the engine's observers after the metrics: tracing and the
// profiler, when enabled.
func (o *observability) observers() []engine.Observer {
	var obs []engine.Observer
	if o.tracer != nil {
		obs = append(obs, o.tracer)
	}
	if o.profiler != nil {
		obs = append(obs, o.profiler)
	}
	return obs
}

// close flushes the last spans and finishes a profile in progress.
func (o *observability) close(log *slog.Logger) {
	if o.profiler != nil {
		if err := o.profiler.Close(); err != nil {
			log.Warn("finish profile", "err", err)
		}
	}
	if o.tracer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := o.tracer.Close(ctx); err != nil {
			log.Warn("flush traces", "err", err)
		}
		cancel()
	}
}

func printObserveBanner(w io.Writer, f *serveFlags, metricsAddr, dcgmAddr, dcgmWhat string) {
	o := &f.obs
	scheme := "http"
	if o.sslCertfile != "" {
		scheme = "https"
	}
	if dcgmAddr != "" {
		fmt.Fprintf(w, "  dcgm-exporter on %s://%s/metrics (Hostname %q): %s\n", scheme, dcgmAddr, o.hostname, dcgmWhat)
	}
	if metricsAddr != "" {
		auth := "open"
		if o.metricsAuthFile != "" {
			auth = "credentials from " + o.metricsAuthFile
		}
		fmt.Fprintf(w, "  metrics also on %s://%s/metrics (%s)\n", scheme, metricsAddr, auth)
	}
	if o.otlpEndpoint != "" {
		proto := o.otlpProtocol
		if proto == "" {
			proto = tracing.ProtocolGRPC
		}
		fmt.Fprintf(w, "  traces: OTLP %s to %s (detailed: %v)\n", proto, o.otlpEndpoint, o.detailed)
	}
	if o.profilerDir != "" {
		fmt.Fprintf(w, "  profiler: POST /start_profile and /stop_profile write to %s (at most %d steps or %s)\n", o.profilerDir, o.profilerMaxSteps, o.profilerMaxDuration)
	}
}
