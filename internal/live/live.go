// Package live is the diagnosis page glassbox serves at /dashboard (and
// glassbox dashboard serves for any vLLM-compatible target or fleet): the
// doctor's three answers per target, throughput against utilisation, the
// queue against the KV cache and its watermark, latency quantiles, the
// doctor's findings and, for glassbox, the engine's own state, over a
// window the page chooses. Its data comes from one of two places: targets
// the server samples into a bounded history (every reading of the last
// minutes, one a minute before that), or Prometheus's range API, which
// holds any window, a past incident's included. Every asset is embedded:
// it works offline.
//
// It reads expositions and Prometheus (through internal/source) and serves
// JSON; it never reaches the engine (cmd hands it readers), as the doctor
// does not, and it derives nothing itself: every number is a doctor
// signal, read by its name, and every threshold the doctor's.
package live

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/source"
)

//go:embed assets
var assets embed.FS

// Target is one instance the page samples.
type Target struct {
	Name string
	// Read returns one exposition of the target's metrics (its
	// dcgm-exporter's appended, when it has one).
	Read func(ctx context.Context) ([]byte, error)
	// Engine, when set, returns the target's /debug/engine JSON (glassbox
	// only).
	Engine func(ctx context.Context) ([]byte, error)
}

// Prometheus is a page read from Prometheus's range API: every instance
// Selector matches, over any window.
type Prometheus struct {
	URL      string
	Selector string
	// Step is the finest step the page reads at (at least the scrape
	// interval); wider windows read coarser ones. Default 15s.
	Step time.Duration
	// Since and End are the window the page opens on: Since up to End,
	// or, with End zero, up to now (live). Default the last 15 minutes.
	Since time.Duration
	End   time.Time
}

// Config is one page: Targets sampled every Interval, or Prometheus.
type Config struct {
	Targets    []Target
	Prometheus *Prometheus

	Interval time.Duration // between readings; default 2s
	// History is how long readings are kept; default 6 hours. Detailed is
	// the recent part of it kept at every reading (default 15 minutes);
	// older readings are kept one a minute.
	History  time.Duration
	Detailed time.Duration
	// FindingsWindow is how much of the history the doctor reads for the
	// current answers and findings; default 2 minutes.
	FindingsWindow time.Duration
	// Thresholds and Hints make the page's doctor: the same answers as
	// glassbox doctor with the same --threshold and hint flags. Zero
	// Thresholds are the defaults.
	Thresholds doctor.Thresholds
	Hints      doctor.Hints
	HTTPClient *http.Client // for Prometheus
	Now        func() time.Time
}

// coarse is the spacing of readings older than Config.Detailed.
const coarse = time.Minute

// Page samples its targets, or reads Prometheus, and serves the page.
type Page struct {
	cfg  Config
	doc  doctor.Diagnoser
	mu   sync.Mutex
	inst []*instance
	// fleet is the doctor's report over every instance's last
	// FindingsWindow, ranked worst first (sampled targets).
	fleet *doctor.Report
	prom  promCache
}

// New makes a page; Run samples its targets.
func New(cfg Config) (*Page, error) {
	if (len(cfg.Targets) == 0) == (cfg.Prometheus == nil) {
		return nil, fmt.Errorf("live page: give targets or a Prometheus")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.History <= 0 {
		cfg.History = 6 * time.Hour
	}
	if cfg.Detailed <= 0 {
		cfg.Detailed = 15 * time.Minute
	}
	cfg.Detailed = min(cfg.Detailed, cfg.History)
	if cfg.FindingsWindow <= 0 {
		cfg.FindingsWindow = 2 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}
	}
	if cfg.Thresholds == (doctor.Thresholds{}) {
		cfg.Thresholds = doctor.DefaultThresholds()
	}
	if err := cfg.Thresholds.Validate(); err != nil {
		return nil, fmt.Errorf("live page: %w", err)
	}
	if cfg.Prometheus != nil {
		pr := *cfg.Prometheus // the caller's stays as given
		if _, err := doctor.ParseSelector(pr.Selector); err != nil {
			return nil, fmt.Errorf("live page: %w", err)
		}
		if pr.Step <= 0 {
			pr.Step = 15 * time.Second
		}
		if pr.Since <= 0 {
			pr.Since = 15 * time.Minute
		}
		cfg.Prometheus = &pr
	}
	p := &Page{cfg: cfg, doc: doctor.NewDiagnoser(cfg.Thresholds, cfg.Hints)}
	for _, t := range cfg.Targets {
		p.inst = append(p.inst, &instance{target: t, window: doctor.NewWindow("live", t.Name)})
	}
	return p, nil
}

// Run reads every target every Interval until ctx ends (a Prometheus page
// reads on demand: Run only waits).
func (p *Page) Run(ctx context.Context) {
	if p.cfg.Prometheus != nil {
		<-ctx.Done()
		return
	}
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	for {
		p.Sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Sample takes one reading of every target now, and diagnoses the fleet's
// last FindingsWindow.
func (p *Page) Sample(ctx context.Context) {
	type reading struct {
		sc  *promtext.Scrape
		err error
		at  time.Time
	}
	got := make([]reading, len(p.inst))
	for i, in := range p.inst {
		rctx, cancel := context.WithTimeout(ctx, p.cfg.Interval)
		body, err := in.target.Read(rctx)
		cancel()
		got[i].at = p.cfg.Now()
		if err == nil {
			got[i].sc, err = promtext.Parse(bytes.NewReader(body))
		}
		got[i].err = err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, in := range p.inst {
		if got[i].err != nil {
			in.problem = got[i].err.Error()
			continue
		}
		in.problem = ""
		in.reads++
		source.Append(in.window, got[i].at, got[i].sc)
		in.window.Snapshots = thin(in.window.Snapshots, got[i].at, p.cfg.Detailed, p.cfg.History)
	}
	p.diagnose(p.cfg.Now())
}

// Handler serves the page under prefix (e.g. /dashboard): the HTML and its
// assets, and its data under prefix/api/ (state, engine), which the caller
// guards like the rest of its API (APIHandler).
func (p *Page) Handler(prefix string) http.Handler {
	mux := http.NewServeMux()
	files, _ := fs.Sub(assets, "assets")
	static := http.StripPrefix(prefix+"/", http.FileServerFS(files))
	mux.HandleFunc("GET "+prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, prefix+"/", http.StatusFound)
	})
	mux.Handle("GET "+prefix+"/", static)
	mux.Handle("GET "+prefix+"/api/", p.APIHandler(prefix))
	return mux
}

// APIHandler serves prefix/api/state and prefix/api/engine.
func (p *Page) APIHandler(prefix string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+prefix+"/api/state", p.serveState)
	mux.HandleFunc("GET "+prefix+"/api/engine", p.serveEngine)
	return mux
}

func (p *Page) serveEngine(w http.ResponseWriter, r *http.Request) {
	q := cmp.Or(r.URL.Query().Get("instance"), "0")
	i, err := strconv.Atoi(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("instance must be an index into the page's targets, got %q", q))
		return
	}
	if i < 0 || i >= len(p.inst) || p.inst[i].target.Engine == nil {
		writeError(w, http.StatusNotFound, "NotFoundError", "this target has no engine state (glassbox only)")
		return
	}
	body, err := p.inst[i].target.Engine(r.Context())
	if err != nil {
		writeError(w, http.StatusBadGateway, "BadGatewayError", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// writeError answers with OpenAI's error body, as the API's routes do (the
// page may not import the server's wire package, which knows the engine).
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// FetchTarget is a target read over HTTP: metricsURL, and dcgmURL beside
// it when given; engineURL (a glassbox /debug/engine) when given.
func FetchTarget(name, metricsURL, dcgmURL, engineURL string, client *http.Client, header http.Header) Target {
	get := func(ctx context.Context, url string) ([]byte, error) { return fetch(ctx, client, url, header) }
	t := Target{Name: name, Read: func(ctx context.Context) ([]byte, error) {
		b, err := get(ctx, metricsURL)
		if err != nil || dcgmURL == "" {
			return b, err
		}
		d, err := get(ctx, dcgmURL)
		if err != nil {
			return b, nil // the GPU's view is lost, not the reading
		}
		return append(append(b, '\n'), d...), nil
	}}
	if engineURL != "" {
		t.Engine = func(ctx context.Context) ([]byte, error) { return get(ctx, engineURL) }
	}
	return t
}

// fetch GETs url (as a scrape: Prometheus's Accept header) and returns the
// body, at most 64 MiB; a status other than 200 is an error.
func fetch(ctx context.Context, client *http.Client, url string, header http.Header) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", promtext.Accept)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}
