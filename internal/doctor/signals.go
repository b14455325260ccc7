package doctor

import (
	"fmt"
	"math"
	"time"
)

// The signal registry: every number the doctor reasons with is defined
// once (signalDefs), with how it is computed over a window and over each
// interval between two readings, the PromQL that reproduces it, and, where
// a target can offer it from more than one place, its sources in order of
// preference. Rules, evidence, provenance, the three answers and the live
// page's charts all read signals from here; none derives its own.

// Signal is one resolved number of a window.
type Signal struct {
	Name   SignalName
	What   string // what it is, for evidence
	Unit   string // ratio, s, tokens/s, … ("" for a count)
	Value  float64
	Source source
	PromQL string
}

// signalDef is one row of the registry.
type signalDef struct {
	name SignalName
	unit string
	// alts are the ways to compute it, in order of preference: the first
	// that gives a number over the window is the signal's source.
	alts []signalAlt
	// constant signals (the target's configuration) have the window's
	// value in every interval.
	constant bool
}

// signalAlt is one way to compute a signal.
type signalAlt struct {
	src    source
	what   string
	value  func(v *view) float64
	promql func(p promql, s *Signals) string // nil: no PromQL (a configuration value, a fit)
}

// Signals are a window's resolved signals.
type Signals struct {
	w       *Window
	th      Thresholds
	hints   Hints
	cfg     targetConfig
	client  *ClientView
	seconds float64
	vals    map[SignalName]*Signal
	alt     map[SignalName]int // the chosen alternative of each signal
	p       promql
}

// evaluate resolves every signal of the registry over w, in the
// registry's order: a definition may read the signals above it.
func evaluate(w *Window, th Thresholds, hints Hints) *Signals {
	s := &Signals{w: w, th: th, hints: hints, cfg: readConfig(w), seconds: w.Duration().Seconds(),
		vals: map[SignalName]*Signal{}, alt: map[SignalName]int{}, p: newPromQL(w, medianStep(w))}
	v := &view{w: w, s: s}
	for _, d := range signalDefs() {
		sig := &Signal{Name: d.name, Unit: d.unit, Value: math.NaN()}
		chosen := len(d.alts) - 1
		for i, a := range d.alts {
			if x := a.value(v); !math.IsNaN(x) {
				sig.Value, chosen = x, i
				break
			}
		}
		a := d.alts[chosen]
		sig.What = a.what
		if !math.IsNaN(sig.Value) {
			sig.Source = a.src
		}
		if a.promql != nil && !math.IsNaN(sig.Value) {
			sig.PromQL = a.promql(s.p, s)
		}
		s.vals[d.name], s.alt[d.name] = sig, chosen
	}
	return s
}

// v is a signal's value over the window; NaN when the window cannot say.
func (s *Signals) v(name SignalName) float64 { return s.get(name).Value }

// src is where a signal came from.
func (s *Signals) src(name SignalName) source { return s.get(name).Source }

func (s *Signals) get(name SignalName) *Signal {
	sig, ok := s.vals[name]
	if !ok {
		panic("BUG: doctor: signal " + string(name) + " read before it is defined (or not defined)")
	}
	return sig
}

// Signal returns a resolved signal by name.
func (s *Signals) Signal(name SignalName) Signal { return *s.get(name) }

// ev is a signal as evidence.
func (s *Signals) ev(name SignalName) Evidence {
	sig := s.get(name)
	e := ev(sig.What, sig.Value, sig.Unit, sig.PromQL)
	if sig.Source != srcNone && sig.Source != srcVLLM {
		e.What += " (" + string(sig.Source) + ")"
	}
	return e
}

// evs lists signals as evidence.
func (s *Signals) evs(names ...SignalName) []Evidence {
	out := make([]Evidence, 0, len(names))
	for _, n := range names {
		out = append(out, s.ev(n))
	}
	return out
}

// IntervalSeries are signals evaluated over each interval between two
// consecutive readings, stamped at the interval's end: what the live page
// charts.
type IntervalSeries struct {
	T  []time.Time
	DT []float64 // the interval's length, seconds
	V  map[SignalName][]float64
}

// Intervals evaluates the named signals over every interval ending after
// since (compared to the millisecond, as the page's times are), each with
// the source the window chose for it, so that a chart and the diagnosis
// read the same thing.
func (s *Signals) Intervals(since time.Time, names ...SignalName) *IntervalSeries {
	out := &IntervalSeries{V: map[SignalName][]float64{}}
	defs := map[SignalName]signalDef{}
	for _, d := range signalDefs() {
		defs[d.name] = d
	}
	for _, n := range names {
		if _, ok := defs[n]; !ok {
			panic("BUG: doctor: no signal " + string(n))
		}
	}
	snaps := s.w.Snapshots
	for i := 1; i < len(snaps); i++ {
		a, b := snaps[i-1], snaps[i]
		if b.T.UnixMilli() <= since.UnixMilli() {
			continue
		}
		sub := *s.w
		sub.Snapshots = []Snapshot{a, b}
		v := &view{w: &sub, s: s, interval: true, defs: defs, memo: map[SignalName]float64{}}
		out.T = append(out.T, b.T)
		out.DT = append(out.DT, b.T.Sub(a.T).Seconds())
		for _, n := range names {
			out.V[n] = append(out.V[n], v.sig(n))
		}
	}
	return out
}

// view is what a signal's definition computes over: the whole window, or
// one interval's two readings. Gauges over an interval are its end's
// reading; counters, its increase.
type view struct {
	w        *Window
	s        *Signals
	interval bool
	defs     map[SignalName]signalDef
	memo     map[SignalName]float64
	fit      *itlFit // the trend signals', made once (itlFit)
}

// sig is another signal's value: the window's, or over this interval.
func (v *view) sig(name SignalName) float64 {
	if !v.interval {
		return v.s.v(name)
	}
	if x, ok := v.memo[name]; ok {
		return x
	}
	d, ok := v.defs[name]
	if !ok {
		panic("BUG: doctor: no signal " + string(name))
	}
	x := v.s.v(name)
	if !d.constant {
		x = d.alts[v.s.alt[name]].value(v)
	}
	v.memo[name] = x
	return x
}

func (v *view) th() Thresholds     { return v.s.th }
func (v *view) cfg() *targetConfig { return &v.s.cfg }

func (v *view) seconds() float64 {
	if d := v.w.Duration().Seconds(); d > 0 {
		return d
	}
	return math.NaN()
}

// inc is a counter's increase; NaN when no reading has it.
func (v *view) inc(key string) float64 {
	if !v.w.Has(key) {
		return math.NaN()
	}
	return v.w.Increase(key)
}

func (v *view) rate(key string) float64 { return v.inc(key) / v.seconds() }

// perEngine is a rate a data-parallel rank keeps of its own time or GPUs
// (busy seconds, step seconds, steps, FLOPs per GPU), per rank: the
// series sum over the ranks.
func (v *view) perEngine(key string) float64 { return v.rate(key) / float64(v.cfg().engines) }

// points are a gauge's readings: every one over the window, the end's
// over an interval.
func (v *view) points(key string) []Point {
	ps := v.w.Gauge(key)
	if v.interval && len(ps) > 0 {
		return ps[len(ps)-1:]
	}
	return ps
}

func (v *view) mean(key string) float64 {
	ps := v.points(key)
	if len(ps) == 0 {
		return math.NaN()
	}
	return summarise(ps).mean
}

func (v *view) peak(key string) float64 {
	ps := v.points(key)
	if len(ps) == 0 {
		return math.NaN()
	}
	return summarise(ps).max
}

// meanAfterFirst is a gauge's mean without the window's first reading
// (the whole window's when it has one).
func (v *view) meanAfterFirst(key string) float64 {
	ps := v.points(key)
	if len(ps) > 1 {
		ps = ps[1:]
	}
	if len(ps) == 0 {
		return math.NaN()
	}
	return summarise(ps).mean
}

// share is the fraction of readings for which keep holds; NaN without
// readings.
func (v *view) share(key string, keep func(float64) bool) float64 {
	ps := v.points(key)
	if len(ps) == 0 {
		return math.NaN()
	}
	return fraction(ps, keep)
}

// shareAt is the fraction of readings (those of key) for which keep holds,
// given each reading's snapshot.
func (v *view) shareAt(key string, keep func(Snapshot) bool) float64 {
	snaps := v.w.Snapshots
	if v.interval && len(snaps) > 0 {
		snaps = snaps[len(snaps)-1:]
	}
	n, k := 0, 0
	for _, sn := range snaps {
		if _, ok := sn.Values[key]; !ok {
			continue
		}
		n++
		if keep(sn) {
			k++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return float64(k) / float64(n)
}

func (v *view) quantile(q float64, family string) float64 { return v.w.Quantile(q, family) }

// ratio is a/b, NaN unless b > 0.
func ratio(a, b float64) float64 {
	if b > 0 {
		return a / b
	}
	return math.NaN()
}

// positive is x when above zero, else NaN: a configuration value that is
// unknown when zero.
func positive(x float64) float64 {
	if x > 0 {
		return x
	}
	return math.NaN()
}

// SignalNames are the registry's signals, in its order.
func SignalNames() []SignalName {
	var out []SignalName
	for _, d := range signalDefs() {
		out = append(out, d.name)
	}
	return out
}

// checkRegistry reports a definition given twice or without a way to
// compute it or a description. (One that reads a signal defined below it
// panics as the window is evaluated.) Tests call it.
func checkRegistry() error {
	seen := map[SignalName]bool{}
	for _, d := range signalDefs() {
		if seen[d.name] {
			return fmt.Errorf("signal %s defined twice", d.name)
		}
		seen[d.name] = true
		if len(d.alts) == 0 {
			return fmt.Errorf("signal %s has no way to compute it", d.name)
		}
		for _, a := range d.alts {
			if a.what == "" {
				return fmt.Errorf("signal %s (%s) says not what it is", d.name, a.src)
			}
		}
	}
	return nil
}

// SourceOf is where a resolved signal came from ("" when the window could
// not say).
func (s *Signals) SourceOf(name SignalName) string { return string(s.src(name)) }

// WhatOf is what a signal is, as its chosen source reads it ("" when no
// source gave a number).
func (s *Signals) WhatOf(name SignalName) string {
	if v, ok := s.vals[name]; ok && !math.IsNaN(v.Value) {
		return v.What
	}
	return ""
}
