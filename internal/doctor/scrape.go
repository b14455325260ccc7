package doctor

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/promtext"
)

// scrapeSource samples a /metrics endpoint directly every Interval for
// Duration.
type scrapeSource struct {
	url      string
	dcgmURL  string // dcgm-exporter beside the target, or ""
	duration time.Duration
	interval time.Duration
	client   *http.Client
	now      func() time.Time
}

// collect takes the readings; a failed scrape is counted as missed, not
// fatal, since a target that drops out mid-window is itself a finding.
func (s *scrapeSource) collect(ctx context.Context) (*Window, error) {
	w := NewWindow("metrics", s.url)
	n := max(1, int(s.duration/s.interval)) + 1
	start := s.now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := range n {
		if i > 0 {
			timer.Reset(time.Until(start.Add(time.Duration(i) * s.interval)))
			select {
			case <-timer.C:
			case <-ctx.Done():
				return nil, fmt.Errorf("sample %s: %w", s.url, ctx.Err())
			}
		} else {
			<-timer.C
		}
		snap, err := s.scrape(ctx, w)
		if err != nil {
			w.miss(err.Error())
			continue
		}
		w.Snapshots = append(w.Snapshots, *snap)
	}
	return w, nil
}

func (s *scrapeSource) scrape(ctx context.Context, w *Window) (*Snapshot, error) {
	sc, err := promtext.Fetch(ctx, s.client, s.url, nil)
	if err != nil {
		return nil, err
	}
	snap := reduce(sc, s.now(), w)
	if s.dcgmURL != "" {
		// A failed DCGM scrape loses the GPU's view, not the reading.
		if d, err := promtext.Fetch(ctx, s.client, s.dcgmURL, nil); err != nil {
			w.problem("dcgm-exporter: " + err.Error())
		} else {
			for k, v := range reduce(d, snap.T, w).Values {
				if isDCGM(k) {
					snap.Values[k] = v
				}
			}
		}
	}
	return snap, nil
}

// isDCGM reports whether a Values key is one of dcgm-exporter's series.
func isDCGM(key string) bool { return slices.Contains(dcgmActivities, key) }

// NewWindow starts a window of readings taken in process (glassbox
// simulate's of its replica, say); Add each one in time order.
func NewWindow(source, target string) *Window {
	return &Window{Source: source, Target: target, Info: map[string]map[string]string{}, Present: map[string]bool{}}
}

// Add records a reading of the target at t.
func (w *Window) Add(t time.Time, sc *promtext.Scrape) {
	w.Snapshots = append(w.Snapshots, *reduce(sc, t, w))
}

// miss records a failed reading.
func (w *Window) miss(why string) {
	w.Missed++
	w.problem(why)
}

// problem records why part of a reading failed, once.
func (w *Window) problem(why string) {
	if !slices.Contains(w.Problems, why) {
		w.Problems = append(w.Problems, why)
	}
}

// parseExposition reduces Prometheus text exposition to a Snapshot,
// recording info labels and present families in w.
func parseExposition(r io.Reader, now time.Time, w *Window) (*Snapshot, error) {
	sc, err := promtext.Parse(r)
	if err != nil {
		return nil, err
	}
	return reduce(sc, now, w), nil
}

// reduce keeps the series the rules read.
func reduce(sc *promtext.Scrape, now time.Time, w *Window) *Snapshot {
	snap := &Snapshot{T: now, Values: map[string]float64{}, Buckets: map[string]map[float64]float64{}}
	for _, name := range sc.Names() {
		w.Present[name] = true
	}
	for _, spec := range scalarSeries() {
		var want promtext.Labels
		if spec.label != "" {
			want = promtext.Labels{spec.label: spec.value}
		}
		get := sc.Sum
		switch spec.agg {
		case kvAggregatorMax:
			get = sc.Max
		case aggAvg:
			get = func(name string, want promtext.Labels) (float64, bool) {
				v, ok := sc.Sum(name, want)
				n := len(sc.Series(name))
				return v / float64(max(n, 1)), ok && n > 0
			}
		}
		if v, ok := get(spec.family, want); ok {
			snap.Values[spec.key] = v
		} else if a := aliasOf(spec.family); a != "" {
			if v, ok := get(a, want); ok {
				snap.Values[spec.key] = v
			}
		}
	}
	if gpus := sc.Series(metricspec.DCGMGREngineActive); len(gpus) > 0 {
		w.Info[infoDCGM] = map[string]string{"modelName": gpus[0].Labels["modelName"]}
	}
	for _, h := range quantileFamilies() {
		b := sc.Buckets(h, nil)
		if a := aliasOf(h); b == nil && a != "" {
			b = sc.Buckets(a, nil)
		}
		if b != nil {
			snap.Buckets[h] = b
		}
	}
	for _, f := range infoFamilies() {
		if labels := sc.Info(f); labels != nil {
			w.Info[f] = labels
		}
	}
	return snap
}
