// Package source reads the doctor's windows: where a target's series come
// from, behind one small interface. Scrape samples a /metrics endpoint
// (and the target's dcgm-exporter) every interval; Prometheus reads the
// same series from Prometheus's range API over any window, one window per
// instance its selector matches; File reads one saved scrape. Append is
// how any exposition becomes a reading of a window (the live page's, a
// simulated replica's).
//
// It is collection only: it fills internal/doctor's Window by the
// doctor's schema (doctor.ScalarSeries and friends) and diagnoses nothing.
// Like the doctor it is a black box over HTTP and must never import the
// engine side (internal/layering enforces this); it reads no flags and no
// environment: cmd/glassbox chooses a source from its flags.
package source

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/promtext"
)

// Source is where a diagnosis's windows come from: one member for a
// target read directly, one per instance for a Prometheus selector that
// matches several.
type Source interface {
	Collect(ctx context.Context) ([]doctor.Member, error)
	// FleetSelector is what the members Collect returns have in common,
	// as label matchers in braces: the name a fleet's report goes by
	// (doctor.Diagnoser.Fleet). "" for a source that reads one target.
	FleetSelector() string
}

// File is one saved /metrics scrape: a snapshot, not a window.
type File struct {
	Path string
	Now  func() time.Time // the reading's time; default time.Now
}

// FleetSelector is "": a file is one target's scrape.
func (File) FleetSelector() string { return "" }

// Collect reads the file as one reading.
func (f File) Collect(context.Context) ([]doctor.Member, error) {
	r, err := os.Open(f.Path)
	if err != nil {
		return nil, fmt.Errorf("read metrics file: %w", err)
	}
	defer r.Close()
	sc, err := promtext.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("read metrics file %s: %w", f.Path, err)
	}
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	w := doctor.NewWindow("file", f.Path)
	Append(w, now(), sc)
	return []doctor.Member{{Instance: f.Path, Window: w}}, nil
}

// Append adds one reading of sc taken at t to w: the series of the
// doctor's schema, each reduced over its label sets (an older vLLM's name
// read where the current one is absent), the histograms' buckets, the info
// families' labels and DCGM's modelName.
func Append(w *doctor.Window, t time.Time, sc *promtext.Scrape) {
	w.Snapshots = append(w.Snapshots, reduce(sc, t, w))
}

// reduce keeps the series the doctor reads.
func reduce(sc *promtext.Scrape, t time.Time, w *doctor.Window) doctor.Snapshot {
	snap := doctor.Snapshot{T: t, Values: map[string]float64{}, Buckets: map[string]map[float64]float64{}}
	for _, name := range sc.Names() {
		w.Present[name] = true
	}
	for _, s := range doctor.ScalarSeries() {
		var want promtext.Labels
		if s.Label != "" {
			want = promtext.Labels{s.Label: s.Value}
		}
		get := sc.Sum
		switch s.Agg {
		case doctor.AggMax:
			get = sc.Max
		case doctor.AggAvg:
			get = func(name string, want promtext.Labels) (float64, bool) {
				v, ok := sc.Sum(name, want)
				n := len(sc.Series(name))
				return v / float64(max(n, 1)), ok && n > 0
			}
		}
		if v, ok := get(s.Family, want); ok {
			snap.Values[s.Key] = v
		} else if a := doctor.AliasOf(s.Family); a != "" {
			if v, ok := get(a, want); ok {
				snap.Values[s.Key] = v
			}
		}
	}
	if n := engines(sc); n > 0 {
		w.Info[doctor.InfoEngines] = map[string]string{"count": strconv.Itoa(n)}
	}
	if gpus := sc.Series(metricspec.DCGMGREngineActive); len(gpus) > 0 {
		w.Info[doctor.InfoDCGM] = map[string]string{"modelName": gpus[0].Labels["modelName"]}
	}
	for _, h := range doctor.BucketFamilies() {
		b := sc.Buckets(h, nil)
		if a := doctor.AliasOf(h); b == nil && a != "" {
			b = sc.Buckets(a, nil)
		}
		if b != nil {
			snap.Buckets[h] = b
		}
	}
	for _, f := range doctor.InfoFamilies() {
		if labels := sc.Info(f); labels != nil {
			w.Info[f] = labels
		}
	}
	return snap
}

// engines counts the engine ranks a scrape's running gauge has (vLLM's
// engine label; a series without one is one engine); 0 without the gauge.
func engines(sc *promtext.Scrape) int {
	seen := map[string]bool{}
	for _, s := range sc.Series(metricspec.NumRequestsRunning) {
		seen[s.Labels["engine"]] = true
	}
	return len(seen)
}

// checkURL refuses anything but an http(s) URL with a host.
func checkURL(u string) error {
	if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("check URL %q: want http://host:port/…", u)
	}
	return nil
}

// enough refuses a window of fewer than two readings: no rate, no
// diagnosis.
func enough(w *doctor.Window) error {
	if len(w.Snapshots) < 2 {
		return fmt.Errorf("read %s: %d of %d readings succeeded, need 2: %s",
			w.Target, len(w.Snapshots), len(w.Snapshots)+w.Missed, strings.Join(w.Problems, "; "))
	}
	return nil
}
