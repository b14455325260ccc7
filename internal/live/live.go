// Package live is the diagnosis page glassbox serves at /dashboard (and
// glassbox dashboard serves for any vLLM-compatible target): throughput
// against utilisation, the queue against the KV cache and its 0.9
// watermark, latency quantiles, the doctor's current findings and, for
// glassbox, the engine's own state. A sampler reads each target's /metrics
// on the server side into a bounded history, so a page opened late still
// shows the recent past and memory stays bounded; the page fetches only
// what is new. Every asset is embedded: it works offline.
//
// It reads expositions and serves JSON; it never reaches the engine (cmd
// hands it readers), as the doctor does not.
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
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/promtext"
)

//go:embed assets
var assets embed.FS

// Target is one instance the page shows.
type Target struct {
	Name string
	// Read returns one exposition of the target's metrics (its
	// dcgm-exporter's appended, when it has one).
	Read func(ctx context.Context) ([]byte, error)
	// Engine, when set, returns the target's /debug/engine JSON (glassbox
	// only).
	Engine func(ctx context.Context) ([]byte, error)
}

// Config is one page.
type Config struct {
	Targets  []Target
	Interval time.Duration // between readings; default 2s
	History  time.Duration // kept in memory; default 15 minutes
	// FindingsWindow is how much of the history the doctor reads for the
	// current findings; default 2 minutes.
	FindingsWindow time.Duration
	Hints          doctor.Hints
	Now            func() time.Time
}

// Page samples its targets and serves the page.
type Page struct {
	cfg  Config
	mu   sync.Mutex
	inst []*instance
}

// instance is one target's history and latest findings.
type instance struct {
	target    Target
	window    *doctor.Window
	findings  []doctor.Finding
	questions *doctor.Questions
	signals   *doctor.Signals // the history's, for the charts
	problem   string          // the last reading's error, if it failed
	reads     int
}

// New makes a page; Run samples its targets.
func New(cfg Config) (*Page, error) {
	if len(cfg.Targets) == 0 {
		return nil, fmt.Errorf("live page: no targets")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.History <= 0 {
		cfg.History = 15 * time.Minute
	}
	if cfg.FindingsWindow <= 0 {
		cfg.FindingsWindow = 2 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &Page{cfg: cfg}
	for _, t := range cfg.Targets {
		w := doctor.NewWindow("live", t.Name)
		w.Hints = cfg.Hints
		p.inst = append(p.inst, &instance{target: t, window: w})
	}
	return p, nil
}

// Run reads every target every Interval until ctx ends.
func (p *Page) Run(ctx context.Context) {
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

// Sample takes one reading of every target now.
func (p *Page) Sample(ctx context.Context) {
	for _, in := range p.inst {
		rctx, cancel := context.WithTimeout(ctx, p.cfg.Interval)
		body, err := in.target.Read(rctx)
		cancel()
		now := p.cfg.Now()
		var sc *promtext.Scrape
		if err == nil {
			sc, err = promtext.Parse(bytes.NewReader(body))
		}
		p.mu.Lock()
		if err != nil {
			in.problem = err.Error()
		} else {
			in.problem = ""
			in.reads++
			in.window.Add(now, sc)
			in.trim(now.Add(-p.cfg.History))
			rep := p.diagnose(in, now)
			in.findings, in.questions = rep.Findings, rep.Questions
			in.signals = doctor.Evaluate(in.window)
		}
		p.mu.Unlock()
	}
}

// trim drops readings older than since, keeping the history bounded.
func (in *instance) trim(since time.Time) {
	s := in.window.Snapshots
	i := 0
	for i < len(s)-1 && s[i].T.Before(since) {
		i++
	}
	if i > 0 {
		in.window.Snapshots = append(s[:0:0], s[i:]...)
	}
}

// diagnose runs the doctor over the last FindingsWindow of the history.
func (p *Page) diagnose(in *instance, now time.Time) *doctor.Report {
	recent := *in.window
	recent.Snapshots = nil
	for _, s := range in.window.Snapshots {
		if !s.T.Before(now.Add(-p.cfg.FindingsWindow)) {
			recent.Snapshots = append(recent.Snapshots, s)
		}
	}
	return doctor.Diagnose(&recent, nil)
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

// State is what the page draws: per instance, the series since the
// asked time, the latest findings, and what the history cannot show.
type State struct {
	Interval float64    `json:"interval_s"`
	Now      float64    `json:"now"`
	Items    []Instance `json:"instances"`
}

// Instance is one target's part of the state.
type Instance struct {
	Name      string           `json:"name"`
	Engine    string           `json:"engine"` // glassbox or vllm
	Readings  int              `json:"readings"`
	Problem   string           `json:"problem,omitempty"`
	Series    *Series          `json:"series"`
	Questions *questions       `json:"questions"` // the doctor's three answers over the findings window
	Findings  []doctor.Finding `json:"findings"`
	HasState  bool             `json:"has_engine_state"`
}

func (p *Page) serveState(w http.ResponseWriter, r *http.Request) {
	since := 0.0 // everything kept
	if v := r.URL.Query().Get("since"); v != "" {
		var err error
		if since, err = strconv.ParseFloat(v, 64); err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("since must be a Unix time in seconds, got %q", v))
			return
		}
	}
	p.mu.Lock()
	st := State{Interval: p.cfg.Interval.Seconds(), Now: float64(p.cfg.Now().UnixMilli()) / 1000}
	for _, in := range p.inst {
		engine := "vllm"
		if in.window.Has(metricspec.ExecutorBusySeconds) {
			engine = "glassbox"
		}
		st.Items = append(st.Items, Instance{Name: in.target.Name, Engine: engine, Readings: len(in.window.Snapshots), Problem: in.problem,
			Series: derive(in.signals, in.window, since), Questions: compact(in.questions), Findings: in.findings, HasState: in.target.Engine != nil})
	}
	p.mu.Unlock()
	writeJSON(w, st)
}

// questions are the doctor's three answers as the page shows them: the
// answer, its kind and its one-line summary (the numbers are in it), not
// the evidence and PromQL behind them, so a refresh stays small.
type questions struct {
	Compute   answer `json:"compute_saturated"`
	KV        answer `json:"kv_limit"`
	Scheduler answer `json:"scheduler_idle"`
}

type answer struct {
	Answer  string   `json:"answer"`
	Kind    string   `json:"kind,omitempty"`
	Summary string   `json:"summary"`
	Sources []string `json:"sources"`
}

func compact(q *doctor.Questions) *questions {
	if q == nil {
		return nil
	}
	c := func(a doctor.Answer) answer {
		return answer{Answer: a.Answer, Kind: a.Kind, Summary: a.Summary, Sources: a.Sources}
	}
	return &questions{Compute: c(q.Compute), KV: c(q.KV), Scheduler: c(q.Scheduler)}
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

// FederatedTargets are the instances selector matches in Prometheus, each
// read through /federate: the latest sample of its vLLM and glassbox
// series (and of its dcgm-exporter's, joined by instance) in the text
// format, which the page samples like a direct scrape.
func FederatedTargets(ctx context.Context, promURL, selector string, client *http.Client) ([]Target, error) {
	matchers, err := doctor.ParseSelector(selector)
	if err != nil {
		return nil, err
	}
	with := func(ms ...string) string {
		return "{" + strings.Join(slices.DeleteFunc(ms, func(m string) bool { return m == "" }), ", ") + "}"
	}
	fed := func(ctx context.Context, ms ...string) ([]byte, error) {
		q := url.Values{}
		for _, m := range ms {
			q.Add("match[]", m)
		}
		return fetch(ctx, client, strings.TrimRight(promURL, "/")+"/federate?"+q.Encode(), nil)
	}
	body, err := fed(ctx, with(fmt.Sprintf("__name__=%q", metricspec.NumRequestsRunning), matchers))
	if err != nil {
		return nil, fmt.Errorf("prometheus federate: %w", err)
	}
	sc, err := promtext.Parse(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	var insts []string
	for _, s := range sc.Series(metricspec.NumRequestsRunning) {
		if in := s.Labels["instance"]; in != "" && !slices.Contains(insts, in) {
			insts = append(insts, in)
		}
	}
	slices.Sort(insts)
	if len(insts) == 0 {
		return nil, fmt.Errorf("prometheus has no %s series matching %q", metricspec.NumRequestsRunning, selector)
	}
	var out []Target
	for _, in := range insts {
		inst := fmt.Sprintf("instance=%q", in)
		engine := with(`__name__=~"vllm:.+|glassbox_.+"`, matchers, inst) // every family metricspec names
		gpu := with(`__name__=~"DCGM_FI_.+"`, inst)
		out = append(out, Target{Name: in, Read: func(ctx context.Context) ([]byte, error) { return fed(ctx, engine, gpu) }})
	}
	return out, nil
}
