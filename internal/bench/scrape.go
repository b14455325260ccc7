package bench

import (
	"context"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/glassbox-llm/glassbox/internal/histogram"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/promtext"
)

// ServerView is the server's side of a pass, from its /metrics scraped
// before, during and after the load. Histogram quantiles come from the
// bucket deltas over the pass, interpolated as PromQL's
// histogram_quantile does; peaks are the highest scraped gauge values, so
// they are only as fine as the scrape interval.
type ServerView struct {
	Samples []GaugeSample // one per scrape, from the pass's start

	TTFT, Queue, E2E, ITL ServerHist

	RequestSuccess, PromptTokens, GenerationTokens float64 // counter deltas
	Preemptions                                    float64
	PrefixCacheQueries, PrefixCacheHits            float64
	PrefixCacheHitRate                             *float64 // hits / queries; nil with no queries

	PeakKVUsage, PeakWaiting, PeakRunning float64
	// MeanWaiting and MeanRunning average the gauges over the scrapes:
	// the load the server carried, which a latency is read against.
	MeanWaiting, MeanRunning float64

	snaps []*snapshot // every scrape, for Readings
}

// GaugeSample is one scrape of the load gauges.
type GaugeSample struct {
	T                         float64 // seconds since the pass started
	Running, Waiting, KVUsage float64
}

// ServerHist summarises one server histogram's increase over a pass, in ms.
type ServerHist struct {
	Count       float64
	Mean        float64
	Percentiles []Percentile
}

// snapshot is one scrape and when it was taken.
type snapshot struct {
	at time.Time
	*promtext.Scrape
}

// Snapshot is one reading of a server's metrics at a time: what a run
// that no HTTP client scraped (simulate) hands NewServerView.
type Snapshot struct {
	At     time.Time
	Scrape *promtext.Scrape
}

// NewServerView is the server view of a pass from its readings, the first
// taken before the load and the last after it.
func NewServerView(readings []Snapshot, percentiles []float64) *ServerView {
	if len(readings) < 2 {
		return nil
	}
	s := &scraper{cfg: &Config{Percentiles: percentiles}}
	for _, r := range readings {
		snap := &snapshot{at: r.At, Scrape: r.Scrape}
		if s.first == nil {
			s.first = snap
		}
		s.record(snap)
	}
	return s.view(s.first, s.snaps[len(s.snaps)-1])
}

// Readings are the scrapes the view was computed from, in order: what
// inference-perf's Prometheus report reads over each window it reports.
func (v *ServerView) Readings() []Snapshot {
	out := make([]Snapshot, len(v.snaps))
	for i, s := range v.snaps {
		out[i] = Snapshot{At: s.at, Scrape: s.Scrape}
	}
	return out
}

// value is a family summed over its label sets (0 when absent).
func (s *snapshot) value(name string) float64 {
	v, _ := s.Sum(name, nil)
	return v
}

// scrapeOnce reads url into a snapshot.
func scrapeOnce(ctx context.Context, client *http.Client, url string, now time.Time) (*snapshot, error) {
	s, err := promtext.Fetch(ctx, client, url, nil)
	if err != nil {
		return nil, err
	}
	return &snapshot{at: now, Scrape: s}, nil
}

// scraper scrapes on an interval in its own goroutine until stop.
type scraper struct {
	cfg    *Config
	first  *snapshot
	mu     sync.Mutex
	gauges []GaugeSample
	prev   *snapshot    // the last reading, for a soak's intervals
	soak   []SoakSample // with Config.Soak
	snaps  []*snapshot
	cancel context.CancelFunc
	done   chan struct{}
}

// startScraper takes the first snapshot and starts scraping; it returns an
// inert scraper when scraping is off or the first scrape fails.
func startScraper(ctx context.Context, cfg *Config) *scraper {
	s := &scraper{cfg: cfg}
	if cfg.MetricsURL == "-" {
		return s
	}
	first, err := scrapeOnce(ctx, cfg.HTTPClient, cfg.MetricsURL, cfg.Now())
	if err != nil {
		return s
	}
	s.first = first
	s.record(first)
	sctx, cancel := context.WithCancel(ctx)
	s.cancel, s.done = cancel, make(chan struct{})
	go s.loop(sctx)
	return s
}

func (s *scraper) loop(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.cfg.ScrapeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if snap, err := scrapeOnce(ctx, s.cfg.HTTPClient, s.cfg.MetricsURL, s.cfg.Now()); err == nil {
				s.record(snap)
			}
		}
	}
}

func (s *scraper) record(snap *snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := snap.at
	if s.first != nil {
		start = s.first.at
	}
	s.snaps = append(s.snaps, snap)
	s.gauges = append(s.gauges, GaugeSample{T: snap.at.Sub(start).Seconds(),
		Running: snap.value(metricspec.NumRequestsRunning), Waiting: snap.value(metricspec.NumRequestsWaiting),
		KVUsage: snap.value(metricspec.KVCacheUsagePerc)})
	if s.cfg.Soak {
		s.soak = append(s.soak, soakSample(s.prev, snap, snap.at.Sub(start).Seconds()))
		s.prev = snap
	}
}

// stop ends the loop and takes a last snapshot once the server has settled
// (nothing running or waiting, polled a bounded number of times: a server
// may record a request's metrics just after its last byte), then computes
// the view.
func (s *scraper) stop(ctx context.Context) *ServerView {
	if s.first == nil {
		return nil
	}
	s.cancel()
	<-s.done
	var last *snapshot
	for range 40 {
		snap, err := scrapeOnce(ctx, s.cfg.HTTPClient, s.cfg.MetricsURL, s.cfg.Now())
		if err != nil {
			break
		}
		last = snap
		if snap.value(metricspec.NumRequestsRunning)+snap.value(metricspec.NumRequestsWaiting) == 0 {
			break
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if last == nil {
		return nil
	}
	s.record(last)
	return s.view(s.first, last)
}

// view computes the deltas between first and last.
func (s *scraper) view(first, last *snapshot) *ServerView {
	d := func(name string) float64 { return last.value(name) - first.value(name) }
	v := &ServerView{Samples: slices.Clone(s.gauges), snaps: slices.Clone(s.snaps),
		RequestSuccess: d(metricspec.RequestSuccess), PromptTokens: d(metricspec.PromptTokens),
		GenerationTokens: d(metricspec.GenerationTokens), Preemptions: d(metricspec.NumPreemptions),
		PrefixCacheQueries: d(metricspec.PrefixCacheQueries), PrefixCacheHits: d(metricspec.PrefixCacheHits)}
	if v.PrefixCacheQueries > 0 {
		r := v.PrefixCacheHits / v.PrefixCacheQueries
		v.PrefixCacheHitRate = &r
	}
	for _, g := range v.Samples {
		v.PeakKVUsage = max(v.PeakKVUsage, g.KVUsage)
		v.PeakWaiting = max(v.PeakWaiting, g.Waiting)
		v.PeakRunning = max(v.PeakRunning, g.Running)
		v.MeanWaiting += g.Waiting / float64(len(v.Samples))
		v.MeanRunning += g.Running / float64(len(v.Samples))
	}
	ps := []float64{50}
	for _, p := range s.cfg.Percentiles {
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	v.TTFT = histDelta(first, last, metricspec.TimeToFirstToken, ps)
	v.Queue = histDelta(first, last, metricspec.RequestQueueTime, ps)
	v.E2E = histDelta(first, last, metricspec.E2ERequestLatency, ps)
	v.ITL = histDelta(first, last, metricspec.InterTokenLatency, ps)
	return v
}

// HistIncrease summarises the increase of one histogram between two
// readings, in ms (its percentiles ps as PromQL's histogram_quantile
// interpolates them).
func HistIncrease(first, last Snapshot, name string, ps []float64) ServerHist {
	return histDelta(&snapshot{first.At, first.Scrape}, &snapshot{last.At, last.Scrape}, name, ps)
}

// histDelta summarises the increase of one histogram between two scrapes.
func histDelta(first, last *snapshot, name string, ps []float64) ServerHist {
	h := ServerHist{Count: last.value(name+"_count") - first.value(name+"_count")}
	if h.Count <= 0 {
		return h
	}
	h.Mean = (last.value(name+"_sum") - first.value(name+"_sum")) / h.Count * 1000
	before := first.Buckets(name, nil)
	delta := map[float64]float64{}
	for b, c := range last.Buckets(name, nil) {
		delta[b] = c - before[b]
	}
	for _, p := range ps {
		if q := histogram.Quantile(p/100, delta); !math.IsNaN(q) {
			h.Percentiles = append(h.Percentiles, Percentile{p, q * 1000})
		}
	}
	return h
}
