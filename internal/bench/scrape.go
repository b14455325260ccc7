package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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

// snapshot is one scrape, reduced to the families bench reads, each summed
// over its label sets.
type snapshot struct {
	at      time.Time
	scalars map[string]float64
	hists   map[string]map[float64]float64 // family → upper bound → cumulative count
	sums    map[string]float64
	counts  map[string]float64
}

const (
	mRunning   = "vllm:num_requests_running"
	mWaiting   = "vllm:num_requests_waiting"
	mKV        = "vllm:kv_cache_usage_perc"
	mSuccess   = "vllm:request_success_total"
	mPrompt    = "vllm:prompt_tokens_total"
	mGen       = "vllm:generation_tokens_total"
	mPreempt   = "vllm:num_preemptions_total"
	mPCQueries = "vllm:prefix_cache_queries_total"
	mPCHits    = "vllm:prefix_cache_hits_total"
	mTTFT      = "vllm:time_to_first_token_seconds"
	mQueue     = "vllm:request_queue_time_seconds"
	mE2E       = "vllm:e2e_request_latency_seconds"
	mITL       = "vllm:inter_token_latency_seconds"
)

// scrapeOnce reads url and reduces it to a snapshot.
func scrapeOnce(ctx context.Context, client *http.Client, url string, now time.Time) (*snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape metrics: status %s", resp.Status)
	}
	return parseMetrics(resp.Body, now)
}

// parseMetrics reduces Prometheus text exposition to a snapshot.
func parseMetrics(r io.Reader, now time.Time) (*snapshot, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	s := &snapshot{at: now, scalars: map[string]float64{}, hists: map[string]map[float64]float64{},
		sums: map[string]float64{}, counts: map[string]float64{}}
	for name, f := range fams {
		// Counters may be exposed without _total on some servers' parsers.
		key := name
		if f.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(key, "_total") {
			key += "_total"
		}
		for _, m := range f.GetMetric() {
			switch {
			case m.Counter != nil:
				s.scalars[key] += m.GetCounter().GetValue()
			case m.Gauge != nil:
				s.scalars[key] += m.GetGauge().GetValue()
			case m.Untyped != nil:
				s.scalars[key] += m.GetUntyped().GetValue()
			case m.Histogram != nil:
				h := s.hists[name]
				if h == nil {
					h = map[float64]float64{}
					s.hists[name] = h
				}
				for _, b := range m.GetHistogram().GetBucket() {
					if !math.IsInf(b.GetUpperBound(), 1) { // the +Inf bucket is the sample count, set below
						h[b.GetUpperBound()] += float64(b.GetCumulativeCount())
					}
				}
				s.sums[name] += m.GetHistogram().GetSampleSum()
				s.counts[name] += float64(m.GetHistogram().GetSampleCount())
				h[math.Inf(1)] = s.counts[name]
			}
		}
	}
	return s, nil
}

// histQuantile is PromQL's histogram_quantile over cumulative buckets:
// linear interpolation inside the bucket holding the rank, the first
// bucket starting at 0, and the highest finite bound when the rank falls in
// the +Inf bucket.
func histQuantile(q float64, buckets map[float64]float64) float64 {
	bounds := make([]float64, 0, len(buckets))
	for b := range buckets {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return math.NaN()
	}
	total := buckets[bounds[len(bounds)-1]]
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for i, b := range bounds {
		c := buckets[b]
		if c >= rank {
			if math.IsInf(b, 1) {
				if i == 0 {
					return math.NaN()
				}
				return bounds[i-1]
			}
			if i == 0 && b <= 0 {
				return b
			}
			if c == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(c-prevCount)
		}
		prevBound, prevCount = b, c
	}
	return bounds[len(bounds)-1]
}

// scraper scrapes on an interval in its own goroutine until stop.
type scraper struct {
	cfg    *Config
	first  *snapshot
	mu     sync.Mutex
	gauges []GaugeSample
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
	s.gauges = append(s.gauges, GaugeSample{T: snap.at.Sub(start).Seconds(),
		Running: snap.scalars[mRunning], Waiting: snap.scalars[mWaiting], KVUsage: snap.scalars[mKV]})
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
		if snap.scalars[mRunning]+snap.scalars[mWaiting] == 0 {
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
	d := func(name string) float64 { return last.scalars[name] - first.scalars[name] }
	v := &ServerView{Samples: slices.Clone(s.gauges),
		RequestSuccess: d(mSuccess), PromptTokens: d(mPrompt), GenerationTokens: d(mGen),
		Preemptions: d(mPreempt), PrefixCacheQueries: d(mPCQueries), PrefixCacheHits: d(mPCHits)}
	if v.PrefixCacheQueries > 0 {
		r := v.PrefixCacheHits / v.PrefixCacheQueries
		v.PrefixCacheHitRate = &r
	}
	for _, g := range v.Samples {
		v.PeakKVUsage = max(v.PeakKVUsage, g.KVUsage)
		v.PeakWaiting = max(v.PeakWaiting, g.Waiting)
		v.PeakRunning = max(v.PeakRunning, g.Running)
	}
	ps := []float64{50}
	for _, p := range s.cfg.Percentiles {
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	v.TTFT = histDelta(first, last, mTTFT, ps)
	v.Queue = histDelta(first, last, mQueue, ps)
	v.E2E = histDelta(first, last, mE2E, ps)
	v.ITL = histDelta(first, last, mITL, ps)
	return v
}

// histDelta summarises the increase of one histogram between two scrapes.
func histDelta(first, last *snapshot, name string, ps []float64) ServerHist {
	h := ServerHist{Count: last.counts[name] - first.counts[name]}
	if h.Count <= 0 {
		return h
	}
	h.Mean = (last.sums[name] - first.sums[name]) / h.Count * 1000
	delta := map[float64]float64{}
	for b, c := range last.hists[name] {
		delta[b] = c - first.hists[name][b]
	}
	for _, p := range ps {
		if q := histQuantile(p/100, delta); !math.IsNaN(q) {
			h.Percentiles = append(h.Percentiles, Percentile{p, q * 1000})
		}
	}
	return h
}
