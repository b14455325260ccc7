package corpus

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
)

// A recorded window is the doctor's window of one scenario read in full
// clothes (glassbox's series and the simulated GPU's dcgm-exporter's),
// stored as gzipped JSON: the series' keys once, then each reading's
// values in that order (null where a reading lacks one). The other clothes
// are derived from it (In).

type recorded struct {
	Source   string                       `json:"source"`
	Target   string                       `json:"target"`
	Selector string                       `json:"selector"`
	Info     map[string]map[string]string `json:"info"`
	Present  []string                     `json:"present"`
	Keys     []string                     `json:"keys"`
	Buckets  map[string][]float64         `json:"buckets"` // family → its bounds, +Inf as 1e308
	Readings []reading                    `json:"readings"`
}

type reading struct {
	T       int64                 `json:"t"` // unix milliseconds
	V       []*float64            `json:"v"`
	Buckets map[string][]*float64 `json:"b,omitempty"`
}

const inf = 1e308 // +Inf in JSON

// Write stores w.
func Write(wr io.Writer, w *doctor.Window) error {
	r := recorded{Source: w.Source, Target: w.Target, Selector: w.Selector, Info: w.Info, Buckets: map[string][]float64{}}
	r.Present = slices.Sorted(maps.Keys(w.Present))
	keys, les := map[string]bool{}, map[string]map[float64]bool{}
	for _, s := range w.Snapshots {
		for k := range s.Values {
			keys[k] = true
		}
		for f, b := range s.Buckets {
			if les[f] == nil {
				les[f] = map[float64]bool{}
			}
			for le := range b {
				les[f][le] = true
			}
		}
	}
	r.Keys = slices.Sorted(maps.Keys(keys))
	for f, set := range les {
		r.Buckets[f] = slices.Sorted(maps.Keys(set))
	}
	num := func(v float64, ok bool) *float64 {
		if !ok {
			return nil
		}
		if math.IsInf(v, 1) {
			v = inf
		}
		return &v
	}
	for _, s := range w.Snapshots {
		rd := reading{T: s.T.UnixMilli(), Buckets: map[string][]*float64{}}
		for _, k := range r.Keys {
			v, ok := s.Values[k]
			rd.V = append(rd.V, num(v, ok))
		}
		for f, bounds := range r.Buckets {
			b, ok := s.Buckets[f]
			if !ok {
				continue
			}
			for _, le := range bounds {
				v, ok := b[le]
				rd.Buckets[f] = append(rd.Buckets[f], num(v, ok))
			}
		}
		r.Readings = append(r.Readings, rd)
	}
	for f := range r.Buckets {
		for i, le := range r.Buckets[f] {
			if math.IsInf(le, 1) {
				r.Buckets[f][i] = inf
			}
		}
	}
	gz := gzip.NewWriter(wr)
	enc := json.NewEncoder(gz)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write window: %w", err)
	}
	return gz.Close()
}

// Read loads a window Write stored.
func Read(rd io.Reader) (*doctor.Window, error) {
	gz, err := gzip.NewReader(rd)
	if err != nil {
		return nil, fmt.Errorf("read window: %w", err)
	}
	var r recorded
	if err := json.NewDecoder(gz).Decode(&r); err != nil {
		return nil, fmt.Errorf("read window: %w", err)
	}
	w := doctor.NewWindow(r.Source, r.Target)
	w.Selector = r.Selector
	for f, l := range r.Info {
		w.Info[f] = l
	}
	for _, p := range r.Present {
		w.Present[p] = true
	}
	val := func(p *float64) float64 {
		if *p >= inf {
			return math.Inf(1)
		}
		return *p
	}
	for _, rd := range r.Readings {
		if len(rd.V) != len(r.Keys) {
			return nil, fmt.Errorf("read window: a reading has %d values for %d keys", len(rd.V), len(r.Keys))
		}
		s := doctor.Snapshot{T: time.UnixMilli(rd.T).UTC(), Values: map[string]float64{}, Buckets: map[string]map[float64]float64{}}
		for i, k := range r.Keys {
			if rd.V[i] != nil {
				s.Values[k] = val(rd.V[i])
			}
		}
		for f, vs := range rd.Buckets {
			bounds := r.Buckets[f]
			if len(vs) != len(bounds) {
				return nil, fmt.Errorf("read window: %s has %d buckets for %d bounds", f, len(vs), len(bounds))
			}
			b := map[float64]float64{}
			for i, le := range bounds {
				if le >= inf {
					le = math.Inf(1)
				}
				if vs[i] != nil {
					b[le] = val(vs[i])
				}
			}
			s.Buckets[f] = b
		}
		w.Snapshots = append(w.Snapshots, s)
	}
	return w, nil
}

// ReadFile loads a recorded window from a file.
func ReadFile(path string) (*doctor.Window, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}

// In is the window as the clothes show it: glassbox's series without the
// GPU's exporter; vLLM's (no glassbox_* family or info) with DCGM's; or
// vLLM's alone. It is what serve --disable-glassbox-metrics and a missing
// dcgm-exporter would have given the same doctor (a test checks the two
// agree on a scenario regenerated each way).
func In(full *doctor.Window, clothes string) *doctor.Window {
	dropGlassbox := clothes != Glassbox
	dropDCGM := clothes != VLLMDCGM
	drop := func(name string) bool {
		return dropGlassbox && strings.HasPrefix(name, "glassbox_") || dropDCGM && (strings.HasPrefix(name, "DCGM_") || name == doctor.InfoDCGM)
	}
	w := doctor.NewWindow(full.Source, full.Target+" ("+clothes+")")
	w.Selector, w.Missed, w.Problems = full.Selector, full.Missed, full.Problems
	for f, l := range full.Info {
		if !drop(f) {
			w.Info[f] = l
		}
	}
	for p := range full.Present {
		if !drop(p) {
			w.Present[p] = true
		}
	}
	for _, s := range full.Snapshots {
		c := doctor.Snapshot{T: s.T, Values: map[string]float64{}, Buckets: map[string]map[float64]float64{}}
		for k, v := range s.Values {
			if !drop(k) {
				c.Values[k] = v
			}
		}
		for f, b := range s.Buckets {
			if !drop(f) {
				c.Buckets[f] = b
			}
		}
		w.Snapshots = append(w.Snapshots, c)
	}
	return w
}
