package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/hub"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/server"
)

// instance is a running server.
type instance struct {
	addr        string
	metricsAddr string // the --metrics-port listener, or ""
	dcgmAddr    string // the --dcgm-port listener, or ""
	engine      *engine.Engine
	done        chan error
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	inst, err := startServe(ctx, args, stdout, stderr)
	if err != nil {
		return err
	}
	return <-inst.done
}

// startServe builds everything, starts listening and returns; the server
// runs until ctx is done, then drains and reports on done.
func startServe(ctx context.Context, args []string, stdout, stderr io.Writer) (*instance, error) {
	f, err := parseServeFlags(args, stderr)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: parseLevel(f.logLevel)}))
	o, err := newObservability(&f.obs, log)
	if err != nil {
		return nil, err
	}
	r, err := newReplica(f, o, log)
	if err != nil {
		o.close(log)
		return nil, err
	}
	release := func() { r.Close(); o.close(log) } // the engine stops first, then the last spans and profile
	lns, err := server.Listen(server.ListenConfig{Host: f.host, Port: f.port, MetricsPort: f.obs.metricsPort,
		DCGMPort: f.obs.dcgmPort, CertFile: f.obs.sslCertfile, KeyFile: f.obs.sslKeyfile})
	if err != nil {
		release()
		return nil, err
	}
	inst := &instance{addr: lns.API.Addr().String(), engine: r.Engine, done: make(chan error, 1)}
	if lns.Metrics != nil {
		inst.metricsAddr = lns.Metrics.Addr().String()
	}
	if lns.DCGM != nil {
		inst.dcgmAddr = lns.DCGM.Addr().String()
	}
	printBanner(stdout, f, r, inst.addr)
	printObserveBanner(stdout, f, inst.metricsAddr, inst.dcgmAddr, r.DCGM)

	r.Start()
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	api := server.Guard(server.GuardConfig{ReadTimeout: f.readTimeout, LimitConcurrency: f.limitConcur,
		Rejected: func() { r.Rejected(metricspec.RejectConcurrency) }}, r.Handler())
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Duration(f.keepAlive * float64(time.Second)), ErrorLog: errLog}
	srv.SetKeepAlivesEnabled(f.keepAlive > 0) // uvicorn's 0: close each connection after its response
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lns.API) }()
	var side []*http.Server // the metrics and DCGM listeners: closed at once on shutdown
	serveSide := func(ln net.Listener, h http.Handler) {
		s := &http.Server{Handler: server.Guard(server.GuardConfig{ReadTimeout: f.readTimeout}, h), ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout: time.Duration(f.keepAlive * float64(time.Second)), ErrorLog: errLog}
		s.SetKeepAlivesEnabled(f.keepAlive > 0)
		side = append(side, s)
		go func() { _ = s.Serve(ln) }() // ends with Close below
	}
	if lns.Metrics != nil {
		serveSide(lns.Metrics, server.MetricsRoutes(r.MetricsHandler(), r.DashboardHandler(), o.creds, r.Handler()))
	}
	if lns.DCGM != nil {
		serveSide(lns.DCGM, server.MetricsRoutes(r.DCGMHandler(), nil, nil, nil))
	}

	go func() {
		var err error
		select {
		case err = <-served:
		case <-ctx.Done():
			st := r.Engine.Stats()
			log.Info("shutting down: draining in-flight requests", "timeout", f.shutdownTimeout, "running", st.Running, "waiting", st.Waiting)
			sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
			if err = srv.Shutdown(sctx); err != nil {
				log.Warn("drain timed out: aborting what is left", "err", err)
				err = nil
			}
			cancel()
		}
		srv.Close()
		for _, s := range side {
			s.Close()
		}
		release() // aborts anything still in flight
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		inst.done <- err
	}()
	return inst, nil
}

// newReplica turns the flags into the replica's configuration.
func newReplica(f *serveFlags, o *observability, log *slog.Logger) (*replica.Replica, error) {
	c, err := f.replicaConfig()
	if err != nil {
		return nil, err
	}
	c.Tokenizer, c.MMap, c.Threads = f.tokenizer, f.mmap, f.threads
	c.Device, c.EnforceEager, c.CUDA = f.device, f.enforceEager, cudaConfig(os.Getenv)
	if !f.gpuMemoryUtilSet {
		c.GPUMemoryUtilization = 0 // the executor's default: vLLM's 0.9 on a GPU, 0.92 on the simulator
	}
	if c.Thresholds, err = f.thresholds.thresholds(); err != nil {
		return nil, err
	}
	c.Sim.TimeScale = f.simTimeScale
	if c.StepTimeout, err = parseStepTimeout(f.stepTimeout); err != nil {
		return nil, err
	}
	c.APIKey, c.Version, c.Logger = f.apiKey, version, log
	c.Observers, c.RecordPhases = o.observers(), f.obs.detailed
	c.DCGM, c.DCGMWindow, c.Hostname = f.obs.dcgmPort != "", f.obs.dcgmInterval, f.obs.hostname
	if len(c.ServedModelNames) == 0 && f.model != "" {
		c.ServedModelNames = []string{f.model} // vLLM serves the --model argument by name
	}
	if o.profiler != nil {
		c.Profiler, c.Profiling = o.profiler, o.profiler.Recording
	}
	if f.model != "" {
		if f.specAcceptanceFrom != "" {
			return nil, errors.New("--spec-acceptance-from: fitted acceptance is the simulator's: the CPU verifies every draft against the model")
		}
		if c.Model, err = resolveModel(f.model, os.Stderr); err != nil {
			return nil, err
		}
	}
	return replica.New(c)
}

func printBanner(w io.Writer, f *serveFlags, r *replica.Replica, addr string) {
	fmt.Fprintf(w, "glassbox %s: serving %q on %s\n", version, r.Names[0], r.Describe)
	if r.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", r.Note)
	}
	fmt.Fprintf(w, "  %s\n", r.DescribeSizes())
	if r.Memory != "" {
		fmt.Fprintf(w, "  %s\n", r.Memory)
	}
	scheme := "http"
	if f.obs.sslCertfile != "" {
		scheme = "https"
	}
	fmt.Fprintf(w, "  listening on %s://%s  (OpenAI API under /v1, metrics at /metrics)\n", scheme, addr)
	fmt.Fprintf(w, "  try: curl %s://%s/v1/completions -H 'Content-Type: application/json' -d '{\"model\":%q,\"prompt\":\"Hello\",\"max_tokens\":32}'\n", scheme, addr, r.Names[0])
	if f.model == "" {
		fmt.Fprintf(w, "  other profiles: --sim-hardware %s --sim-model %s --tensor-parallel-size N\n",
			strings.Join(profiles.HardwareNames(), "|"), strings.Join(profiles.ModelNames(), "|"))
		fmt.Fprintln(w, "  a real model: --model PATH.gguf (llama, mistral, qwen2, qwen3) on an NVIDIA GPU (F32/F16/BF16/Q8_0) or this CPU (those and Q4_0/Q5_0/Q4_K/Q5_K/Q6_K)")
	}
}

// resolveModel turns --model into a local path, downloading an hf://
// reference into the cache first.
func resolveModel(arg string, progress io.Writer) (string, error) {
	if !strings.HasPrefix(arg, hub.Prefix) {
		return arg, nil
	}
	return hubFetch(context.Background(), arg, progress)
}

// resolveSimModel turns --sim-model into a profile's name or a local
// config.json: hf://OWNER/REPO names the repository's config.json (and
// hf://OWNER/REPO/FILE a file of it), downloaded into the cache first.
func resolveSimModel(arg string, progress io.Writer) (string, error) {
	rest, ok := strings.CutPrefix(arg, hub.Prefix)
	if !ok {
		return arg, nil
	}
	if strings.Count(strings.Trim(rest, "/"), "/") == 1 {
		arg = hub.Prefix + strings.Trim(rest, "/") + "/config.json"
	}
	path, err := hubFetch(context.Background(), arg, progress)
	if err != nil {
		return "", fmt.Errorf("--sim-model: %w", err)
	}
	return path, nil
}

// hubFetch downloads an hf:// reference (a model's file, or a dataset's as
// hf://datasets/…) into the cache unless it is there ($HF_HOME-style:
// $GLASSBOX_CACHE, else the user cache directory; $HF_ENDPOINT and
// $HF_TOKEN as the hub clients use) and returns its local path.
func hubFetch(ctx context.Context, arg string, progress io.Writer) (string, error) {
	ref, err := hub.ParseRef(arg)
	if err != nil {
		return "", err
	}
	cache, err := hubCache()
	if err != nil {
		return "", fmt.Errorf("%s: %w", arg, err)
	}
	c := hub.Config{BaseURL: os.Getenv("HF_ENDPOINT"), CacheDir: cache, Progress: progress, Token: os.Getenv("HF_TOKEN")}
	return c.Fetch(ctx, ref)
}

// hubRows reads a hub dataset's rows through the dataset viewer
// ($HF_DATASETS_SERVER, else the hub's), cached as the downloads are.
func hubRows(ctx context.Context, dataset, subset, split string, offset, length int) ([]map[string]any, int, error) {
	cache, err := hubCache()
	if err != nil {
		return nil, 0, err
	}
	c := hub.Config{CacheDir: cache, Token: os.Getenv("HF_TOKEN"), RowsURL: os.Getenv("HF_DATASETS_SERVER")}
	return c.Rows(ctx, dataset, subset, split, offset, length)
}

// hubCache is the cache directory: $GLASSBOX_CACHE/hf, else the user's.
func hubCache() (string, error) {
	if dir := os.Getenv("GLASSBOX_CACHE"); dir != "" {
		return filepath.Join(dir, "hf"), nil
	}
	cache, err := hub.DefaultCacheDir()
	if err != nil {
		return "", fmt.Errorf("%w (set GLASSBOX_CACHE)", err)
	}
	return cache, nil
}

// cudaConfig is where the GPU executor finds cuBLASLt: $GLASSBOX_CUBLAS
// names the file; else CUDA's and the active Python environment's
// directories join the usual places.
func cudaConfig(getenv func(string) string) replica.CUDAConfig {
	c := replica.CUDAConfig{BLASLt: getenv("GLASSBOX_CUBLAS")}
	for _, v := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if d := getenv(v); d != "" {
			c.BLASLtDirs = append(c.BLASLtDirs, filepath.Join(d, "lib64"), filepath.Join(d, "targets", "*-linux", "lib"))
		}
	}
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if d := getenv(v); d != "" {
			c.BLASLtDirs = append(c.BLASLtDirs, filepath.Join(d, "lib"), filepath.Join(d, "lib", "python3*", "site-packages", "nvidia", "cublas", "lib"))
		}
	}
	return c
}
