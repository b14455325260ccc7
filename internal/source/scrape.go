package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/promtext"
)

// Scrape samples a target's /metrics directly every Interval for
// Duration, and its dcgm-exporter beside it when DCGMURL is set.
type Scrape struct {
	URL      string
	DCGMURL  string        // the target's dcgm-exporter, its GPUs; "" for none
	Duration time.Duration // default 60s
	Interval time.Duration // default 5s
	Client   *http.Client  // default: 30 s timeout, no proxy
	Now      func() time.Time
}

// FleetSelector is "": a scrape reads one target.
func (Scrape) FleetSelector() string { return "" }

func (s Scrape) withDefaults() (Scrape, error) {
	for _, u := range []string{s.URL, s.DCGMURL} {
		if u != "" {
			if err := checkURL(u); err != nil {
				return s, err
			}
		}
	}
	if s.URL == "" {
		return s, errors.New("check config: a scrape needs the target's metrics URL")
	}
	if s.Duration == 0 {
		s.Duration = 60 * time.Second
	}
	if s.Interval == 0 {
		s.Interval = 5 * time.Second
	}
	if s.Duration < 0 || s.Interval <= 0 {
		return s, errors.New("check config: durations must be positive")
	}
	if s.Duration < s.Interval {
		return s, errors.New("check config: --duration must be at least one --interval")
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Client == nil {
		s.Client = defaultClient()
	}
	return s, nil
}

func defaultClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}
}

// Collect takes the readings; a failed scrape is counted as missed, not
// fatal, since a target that drops out mid-window is itself a finding.
// Fewer than two readings is an error.
func (s Scrape) Collect(ctx context.Context) ([]doctor.Member, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	w := doctor.NewWindow("metrics", s.URL)
	instance := s.URL
	if u, err := url.Parse(s.URL); err == nil {
		instance = u.Host
		w.Selector = fmt.Sprintf("{instance=%q}", u.Host)
	}
	n := max(1, int(s.Duration/s.Interval)) + 1
	start := s.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := range n {
		if i > 0 {
			timer.Reset(time.Until(start.Add(time.Duration(i) * s.Interval)))
			select {
			case <-timer.C:
			case <-ctx.Done():
				return nil, fmt.Errorf("sample %s: %w", s.URL, ctx.Err())
			}
		} else {
			<-timer.C
		}
		if err := s.read(ctx, w); err != nil {
			w.Fail(err.Error())
		}
	}
	if err := enough(w); err != nil {
		return nil, err
	}
	return []doctor.Member{{Instance: instance, Window: w}}, nil
}

// read takes one reading of the target, and of its GPUs when it has a
// dcgm-exporter: a failed DCGM scrape loses the GPU's view, not the
// reading.
func (s Scrape) read(ctx context.Context, w *doctor.Window) error {
	sc, err := promtext.Fetch(ctx, s.Client, s.URL, nil)
	if err != nil {
		return err
	}
	snap := reduce(sc, s.Now(), w)
	if s.DCGMURL != "" {
		if d, err := promtext.Fetch(ctx, s.Client, s.DCGMURL, nil); err != nil {
			w.Note("dcgm-exporter: " + err.Error())
		} else {
			gpu := reduce(d, snap.T, w)
			for _, series := range doctor.ScalarSeries() {
				if v, ok := gpu.Values[series.Key]; ok && series.DCGM {
					snap.Values[series.Key] = v
				}
			}
		}
	}
	w.Snapshots = append(w.Snapshots, snap)
	return nil
}
